"""kafka: new data when any partition's end offset is beyond the watermark offsets.

sensor_id is `product: topic` or a bare topic. Broker settings come from the `kafka:` section of
heartbeat.yml; a product may override them under `kafka.products.<product>` (its own cluster or
credentials). The check is two ListOffsets requests (earliest and latest) through the admin client:
no consumer group, no commit, no message read. The watermark is the end offset of every partition;
the event carries per-partition offset ranges. For preprocess_query the new messages, at most
`kafka.max_messages`, become the view `sensor_new_data` (key, value, topic, partition, offset,
timestamp).
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Mapping

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import BinaryType, IntegerType, LongType, StringType, StructField, StructType, TimestampType

from harness.config import KafkaClientSettings, env_secret
from harness.errors import SensorError
from harness.model import SensorSource
from harness.sensors.base import Detection, NewData, NothingNew, Position, Sensor, Upstream, Watermark

log = logging.getLogger(__name__)

_TOPIC = re.compile(r"^[A-Za-z0-9._-]{1,249}$")
_PLAIN_KEYS = {  # heartbeat.yml key -> librdkafka property
    "bootstrap_servers": "bootstrap.servers", "security_protocol": "security.protocol",
    "sasl_mechanism": "sasl.mechanism", "username": "sasl.username",
    "ssl_ca_location": "ssl.ca.location", "ssl_certificate_location": "ssl.certificate.location",
    "ssl_key_location": "ssl.key.location", "ssl_endpoint_identification_algorithm":
        "ssl.endpoint.identification.algorithm",
}
_SECRET_KEYS = {"username_env": "sasl.username", "password_env": "sasl.password",
                "ssl_key_password_env": "ssl.key.password"}
DEFAULT_MAX_MESSAGES = 10_000
DEFAULT_TIMEOUT_SECONDS = 10.0

MESSAGE_SCHEMA = StructType([
    StructField("key", BinaryType()), StructField("value", BinaryType()), StructField("topic", StringType()),
    StructField("partition", IntegerType()), StructField("offset", LongType()),
    StructField("timestamp", TimestampType()),
])


@dataclass(frozen=True)
class Offsets:
    """Where each partition of a topic starts (earliest retained) and ends (next offset written)."""

    earliest: Mapping[int, int]
    end: Mapping[int, int]


def parse_sensor_id(upstream: Upstream) -> tuple[str | None, str]:
    """`product: topic` -> (product, topic); a bare topic -> (None, topic)."""
    head, sep, tail = upstream.sensor_id.partition(":")
    product, topic = (head.strip(), tail.strip()) if sep else (None, head.strip())
    if not _TOPIC.match(topic):
        raise SensorError(f"{upstream.label}: {topic!r} is not a Kafka topic name "
                          "(letters, digits, '.', '_', '-'); sensor_id is 'product: topic' or 'topic'")
    return product or None, topic


class KafkaSensor(Sensor):
    sources = (SensorSource.KAFKA,)

    def settings(self, product: str | None) -> KafkaClientSettings:
        """The `kafka:` section, with `kafka.products.<product>` laid over it."""
        return self.config.kafka.for_product(product)

    def client_config(self, upstream: Upstream, product: str | None) -> dict[str, Any]:
        section = self.settings(product)
        where = f"kafka.products.{product}" if product in self.config.kafka.products else "kafka"
        if not section.bootstrap_servers:
            raise SensorError(f"{upstream.label}: no Kafka brokers configured; set kafka.bootstrap_servers "
                              f"(or kafka.products.{product or '<product>'}.bootstrap_servers) in heartbeat.yml")
        values = section.model_dump()
        conf: dict[str, Any] = {prop: str(values[key]) for key, prop in _PLAIN_KEYS.items()
                                if values.get(key) is not None}
        conf["security.protocol"] = section.security_protocol or "PLAINTEXT"
        for key, prop in _SECRET_KEYS.items():
            value = env_secret(values.get(key), f"{where}.{key}")
            if value is not None:
                conf[prop] = value
        conf.update(section.properties)
        conf["logger"] = log
        return conf

    def timeout(self, product: str | None) -> float:
        configured = self.settings(product).timeout_seconds or DEFAULT_TIMEOUT_SECONDS
        return min(configured, self.config.sensing.check_timeout_seconds)

    def read_position(self, upstream: Upstream) -> Position:
        product, topic = parse_sensor_id(upstream)
        admin = AdminClient(self.client_config(upstream, product))
        timeout = self.timeout(product)
        try:
            partitions = self._partitions(admin, upstream, topic, timeout)
            offsets = Offsets(
                earliest=self._offsets(admin, topic, partitions, OffsetSpec.earliest(), timeout),
                end=self._offsets(admin, topic, partitions, OffsetSpec.latest(), timeout),
            )
        except KafkaException as exc:
            raise SensorError(f"{upstream.label}: cannot read offsets of {topic} from "
                              f"{self.settings(product).bootstrap_servers}: {exc.args[0].str()}") from exc
        return Position(watermark={"offsets": {str(p): o for p, o in sorted(offsets.end.items())}},
                        observed=offsets)

    @staticmethod
    def _partitions(admin: AdminClient, upstream: Upstream, topic: str, timeout: float) -> list[int]:
        metadata = admin.list_topics(topic, timeout=timeout).topics.get(topic)
        if metadata is None or metadata.error is not None or not metadata.partitions:
            cause = metadata.error.str() if metadata is not None and metadata.error else "no partitions"
            raise SensorError(f"{upstream.label}: topic {topic} is not available: {cause}")
        return sorted(metadata.partitions)

    @staticmethod
    def _offsets(admin: AdminClient, topic: str, partitions: list[int], spec: OffsetSpec,
                 timeout: float) -> dict[int, int]:
        futures = admin.list_offsets({TopicPartition(topic, p): spec for p in partitions},
                                     request_timeout=timeout)
        return {tp.partition: int(future.result().offset) for tp, future in futures.items()}

    def detect(self, upstream: Upstream, position: Position, since: Watermark | None) -> Detection:
        ranges = self.ranges(position.observed, since)
        if not ranges:
            return NothingNew("no partition's end offset is beyond the watermark")
        changes = {
            "operation": "APPEND",
            "topic": parse_sensor_id(upstream)[1],
            "partitions": ranges,
            "message_count": sum(r["to"] - r["from"] for r in ranges),
        }
        return NewData(watermark=position.watermark, changes=changes)

    @staticmethod
    def ranges(offsets: Offsets, since: Watermark | None) -> list[dict[str, int | bool]]:
        """Per partition with new messages: [from, to) offsets. A partition new to the watermark starts at
        its earliest offset; offsets the broker no longer retains are flagged as expired."""
        seen = {int(p): int(o) for p, o in (since or {}).get("offsets", {}).items()}
        ranges: list[dict[str, int | bool]] = []
        for partition, end in sorted(offsets.end.items()):
            start = seen.get(partition, offsets.earliest[partition])
            if end < start:  # the topic was recreated: offsets restarted
                start = offsets.earliest[partition]
            if end <= start:
                continue
            entry: dict[str, int | bool] = {"partition": partition, "from": start, "to": end}
            if start < offsets.earliest[partition]:
                entry["expired_before"] = offsets.earliest[partition]  # retention deleted [from, expired_before)
            ranges.append(entry)
        return ranges

    def new_data_frame(self, spark: SparkSession, upstream: Upstream, position: Position,
                       since: Watermark | None) -> DataFrame:
        product, topic = parse_sensor_id(upstream)
        limit = self.settings(product).max_messages or DEFAULT_MAX_MESSAGES
        messages = self._consume(upstream, product, topic, self.ranges(position.observed, since), limit)
        return spark.createDataFrame(messages, MESSAGE_SCHEMA)

    def _consume(self, upstream: Upstream, product: str | None, topic: str,
                 ranges: list[dict[str, int | bool]], limit: int) -> list[tuple[Any, ...]]:
        """Read the messages in `ranges` (at most `limit`), without a consumer group commit."""
        conf = self.client_config(upstream, product) | {
            "group.id": "heartbeat-sensor", "enable.auto.commit": False, "enable.partition.eof": True}
        wanted = {int(r["partition"]): (int(max(r["from"], r.get("expired_before", 0))), int(r["to"]))
                  for r in ranges}
        consumer = Consumer(conf)
        try:
            consumer.assign([TopicPartition(topic, p, start) for p, (start, _) in wanted.items()])
            return self._poll(consumer, upstream, wanted, limit)
        finally:
            consumer.close()

    def _poll(self, consumer: Consumer, upstream: Upstream, wanted: dict[int, tuple[int, int]],
              limit: int) -> list[tuple[Any, ...]]:
        rows: list[tuple[Any, ...]] = []
        open_partitions = {p for p, (start, end) in wanted.items() if start < end}
        deadline = time.monotonic() + self.config.sensing.check_timeout_seconds
        while open_partitions and len(rows) < limit and time.monotonic() < deadline:
            for message in consumer.consume(min(500, limit - len(rows)), timeout=1.0):
                partition, offset, error = message.partition(), message.offset(), message.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF and partition is not None:
                        open_partitions.discard(partition)
                        continue
                    raise SensorError(f"{upstream.label}: reading messages failed: {error.str()}")
                assert partition is not None and offset is not None  # a message without error has both
                if offset >= wanted[partition][1]:
                    open_partitions.discard(partition)
                    continue
                millis = message.timestamp()[1]
                stamp = datetime.fromtimestamp(millis / 1000, tz=timezone.utc) if millis >= 0 else None
                rows.append((message.key(), message.value(), message.topic(), partition, offset, stamp))
                if offset + 1 >= wanted[partition][1]:
                    open_partitions.discard(partition)
        return rows[:limit]
