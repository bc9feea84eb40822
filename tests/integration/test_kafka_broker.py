"""The streaming tests' broker: a real Kafka (KRaft) from Maven Central's jars, started
by the fixture, and what its clients see of it."""
from __future__ import annotations

import uuid

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicCollection, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic


def test_the_broker_takes_and_serves_records_and_refuses_unknown_topics(
        kafka_broker: str) -> None:
    topic = f"broker-check-{uuid.uuid4().hex[:8]}"      # a broker YARNFLOW_TEST_KAFKA names is shared
    admin = AdminClient({"bootstrap.servers": kafka_broker})
    for future in admin.create_topics([NewTopic(topic, 3, 1)]).values():
        future.result(30)
    producer = Producer({"bootstrap.servers": kafka_broker})
    for i in range(300):
        producer.produce(topic, value=str(i).encode(), partition=i % 3)
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": kafka_broker, "group.id": "check",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(3)])
    values: list[int] = []
    while len(values) < 300:
        batch = consumer.consume(300, 10)
        assert batch, f"no records within 10 s ({len(values)} of 300 read)"
        values.extend(int(m.value()) for m in batch if m.error() is None)
    consumer.close()
    assert sorted(values) == list(range(300))
    metadata = admin.list_topics(timeout=10)
    assert topic in metadata.topics and "never-made" not in metadata.topics
    with pytest.raises(KafkaException):       # auto-creation is off: a missing topic is missing
        admin.describe_topics(TopicCollection(["never-made"]))["never-made"].result(10)
