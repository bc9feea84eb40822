"""The planner: size estimates carried through every operator, and the join strategy
chosen from them (seed 003: a join whose small side lost its estimate was hashed
instead of broadcast, and one subtask got 13/14 of the rows)."""
from yarnflow.core.estimates import Estimate
from yarnflow.client.planner.estimates import estimate_vertices
from yarnflow.client.planner.joins import JoinPlan, JoinStrategy, plan_join
from yarnflow.client.planner.schemas import check_schemas

__all__ = ["Estimate", "estimate_vertices", "JoinPlan", "JoinStrategy", "plan_join",
           "check_schemas"]
