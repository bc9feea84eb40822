"""TPC-H's 22 queries as yarnflow pipelines (issue 56), one module per query: ``SQL``
(the query's text with its validation parameters, which the tests give DuckDB),
``ORDER`` (its ORDER BY columns) and ``build(pipeline, data)`` (the query's last
DataSet). ``run.py`` runs them; ``data.py`` makes their tables with tpchgen-cli."""
QUERIES = tuple(range(1, 23))
