"""Kafka for tests: librdkafka's mock cluster, living inside one Producer, with its brokers on
127.0.0.1 ports that any other real confluent-kafka client (the sensor's) can use. The mock creates
topics on first use with 4 partitions; CreateTopics is not supported by it."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from confluent_kafka import Producer

MOCK_PARTITIONS = 4
log = logging.getLogger("tests.kafka")


@dataclass
class MockKafka:
    producer: Producer
    bootstrap_servers: str

    @classmethod
    def start(cls) -> "MockKafka":
        producer = Producer({"test.mock.num.brokers": 1, "logger": log})
        brokers = producer.list_topics(timeout=10).brokers.values()
        return cls(producer, ",".join(f"{b.host}:{b.port}" for b in brokers))

    def produce(self, topic: str, *values: str, partition: int = 0, key: str | None = None) -> None:
        for value in values:
            self.producer.produce(topic, value=value.encode(), key=key.encode() if key else None, partition=partition)
        if self.producer.flush(10) != 0:
            raise AssertionError("mock Kafka did not acknowledge every message")

    def create_topic(self, topic: str) -> None:
        """The mock creates a topic (with MOCK_PARTITIONS partitions) when metadata is asked for it."""
        self.producer.list_topics(topic, timeout=10)
