"""kafka: new data when any partition's end offset is beyond the watermark offsets.

sensor_id is `product: topic` or a bare topic. Broker settings come from the `kafka:` section of
heartbeat.yml; a product may override them under `kafka.products.<product>` (its own cluster or
credentials). Both are resolved when the sensor is built: secrets read from the environment and the
librdkafka configuration checked by librdkafka itself, so a bad section stops the start, naming its key.
The check is two ListOffsets requests (earliest and latest) through the admin client: no consumer
group, no commit, no message read; each request may take the time left until the check's deadline, at
most `timeout_seconds`. The watermark is the end offset of every partition; the event carries
per-partition offset ranges. For preprocess_query the new messages become the view `sensor_new_data`
(key, value, topic, partition, offset, timestamp) in pages of at most `kafka.max_messages`, oldest
first, until the query returns a row or the messages end.
"""

from __future__ import annotations

import logging
import re
import sys
from contextlib import closing
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Generator, Mapping, cast

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec
from pyspark.sql import DataFrame
from pyspark.sql.types import BinaryType, IntegerType, LongType, StringType, StructField, StructType, TimestampType

from harness.core.config import Config, KafkaClientSettings, KafkaSettings, env_secret
from harness.core.errors import ConfigError, PositionUnavailable, SensorError
from harness.core.vocabulary import SensorSource
from harness.sensors.base import Detection, NewData, NothingNew, Sensor, Upstream, Watermark
from harness.sensors.context import CheckContext
from harness.sensors.declaration import PositionQuery, RangeRequest, SensorDeclaration

log = logging.getLogger(__name__)

_TOPIC = re.compile(r"^[A-Za-z0-9._-]{1,249}$")
_PLAIN_KEYS = {  # heartbeat.yml key -> librdkafka property
    "bootstrap_servers": "bootstrap.servers",
    "security_protocol": "security.protocol",
    "sasl_mechanism": "sasl.mechanism",
    "username": "sasl.username",
    "ssl_ca_location": "ssl.ca.location",
    "ssl_certificate_location": "ssl.certificate.location",
    "ssl_key_location": "ssl.key.location",
    "ssl_endpoint_identification_algorithm": "ssl.endpoint.identification.algorithm",
}
_SECRET_KEYS = {
    "username_env": "sasl.username",
    "password_env": "sasl.password",
    "ssl_key_password_env": "ssl.key.password",
}
DEFAULT_MAX_MESSAGES = 10_000
DEFAULT_TIMEOUT_SECONDS = 10.0

MESSAGE_SCHEMA = StructType(
    [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
    ]
)


@dataclass(frozen=True)
class KafkaClient:
    """How to reach one cluster or account: the `kafka:` section, or a product's settings laid over it."""

    where: str  # the heartbeat.yml key it comes from: `kafka` or `kafka.products.<product>`
    conf: Mapping[str, Any] = field(repr=False)  # librdkafka properties, secrets included
    max_messages: int = DEFAULT_MAX_MESSAGES
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS  # cap on one request, within the check's deadline

    @property
    def bootstrap_servers(self) -> str | None:
        return self.conf.get("bootstrap.servers")

    def config_for(self, upstream: Upstream, product: str | None = None) -> dict[str, Any]:
        """The configuration of a client for one check; a SensorError when no brokers are configured (only
        the `kafka:` section itself can lack them: a product without brokers is refused at the start)."""
        if not self.bootstrap_servers:
            raise SensorError(
                f"{upstream.label}: no Kafka brokers configured; set kafka.bootstrap_servers "
                f"(or kafka.products.{product or '<product>'}.bootstrap_servers) in heartbeat.yml"
            )
        return {**self.conf, "logger": log}


def kafka_client(section: KafkaClientSettings, where: str) -> KafkaClient:
    """One client's settings resolved: secrets read from the environment, the properties checked."""
    values = section.model_dump()
    conf: dict[str, Any] = {prop: str(values[key]) for key, prop in _PLAIN_KEYS.items() if values.get(key) is not None}
    conf["security.protocol"] = section.security_protocol or "PLAINTEXT"
    for key, prop in _SECRET_KEYS.items():
        value = env_secret(values.get(key), f"{where}.{key}")
        if value is not None:
            conf[prop] = value
    conf.update(section.properties)
    _check_with_librdkafka(conf, section.properties, where)
    return KafkaClient(
        where, conf, section.max_messages or DEFAULT_MAX_MESSAGES, section.timeout_seconds or DEFAULT_TIMEOUT_SECONDS
    )


def _check_with_librdkafka(conf: Mapping[str, Any], properties: Mapping[str, str], where: str) -> None:
    """librdkafka's own check of property names and values, on a client that never connects (no brokers,
    no security protocol: nothing is opened, neither sockets nor certificate files)."""
    probe = {k: v for k, v in conf.items() if k not in ("bootstrap.servers", "security.protocol")}
    if not probe:
        return
    try:
        Producer({**probe, "log_level": 0})
    except KafkaException as exc:
        problem = exc.args[0].str()
        keys = {prop: key for key, prop in (_PLAIN_KEYS | _SECRET_KEYS).items()}
        named = [f"properties.{p}" if p in properties else keys.get(p, p) for p in conf if f'"{p}"' in problem]
        key = f"{where}.{named[0]}" if named else where
        raise ConfigError(f"{key}: refused by librdkafka: {problem}") from None


@dataclass(frozen=True)
class TopicOffsets:
    """The position of a topic: where each partition starts (earliest retained) and ends (next offset
    written)."""

    topic: str
    earliest: Mapping[int, int]
    end: Mapping[int, int]

    @property
    def watermark(self) -> Watermark:
        return {"offsets": {str(p): o for p, o in sorted(self.end.items())}}


def parse_sensor_id(upstream: Upstream) -> tuple[str | None, str]:
    """`product: topic` -> (product, topic); a bare topic -> (None, topic)."""
    head, sep, tail = upstream.sensor_id.partition(":")
    product, topic = (head.strip(), tail.strip()) if sep else (None, head.strip())
    if not _TOPIC.match(topic):
        raise SensorError(
            f"{upstream.label}: {topic!r} is not a Kafka topic name "
            "(letters, digits, '.', '_', '-'); sensor_id is 'product: topic' or 'topic'"
        )
    return product or None, topic


class KafkaSensor(Sensor[TopicOffsets]):
    position_names_data = True  # end offsets: the same messages

    def __init__(self, default: KafkaClient, products: Mapping[str, KafkaClient]) -> None:
        self.default, self.products = default, dict(products)

    @classmethod
    def from_settings(cls, settings: KafkaSettings) -> KafkaSensor:
        """The `kafka:` section and each of its products, resolved."""
        products = {}
        for product in settings.products:
            where = f"kafka.products.{product}"
            products[product] = kafka_client(settings.for_product(product), where)
            if not products[product].bootstrap_servers:
                raise ConfigError(
                    f"{where}.bootstrap_servers: not set, neither for the product nor in kafka.bootstrap_servers"
                )
        return cls(kafka_client(settings.for_product(None), "kafka"), products)

    def client(self, product: str | None) -> KafkaClient:
        """The product's own settings when it has some, else the `kafka:` section."""
        return self.products.get(product, self.default) if product is not None else self.default

    def _target(self, upstream: Upstream) -> tuple[KafkaClient, dict[str, Any], str]:
        """(the client's settings, its configuration for a check of `upstream`, the topic)."""
        product, topic = parse_sensor_id(upstream)
        client = self.client(product)
        return client, client.config_for(upstream, product), topic

    def check_upstream(self, upstream: Upstream) -> None:
        self._target(upstream)

    def doubt(self, upstream: Upstream) -> str | None:
        """A product heartbeat.yml has no settings for reads the `kafka:` section's cluster, as meant when
        a product is only a label; where kafka.products lists others, it is more likely a misspelling."""
        product, _ = parse_sensor_id(upstream)
        if product is None or product in self.products or not self.products:
            return None
        return (
            f"product {product!r} has no settings under kafka.products ({', '.join(sorted(self.products))}), "
            f"so its checks read the kafka: section's cluster; check its spelling, or list it there "
            f"(`{product}: {{}}` keeps the kafka: section's settings)"
        )

    def read_position(self, context: CheckContext, upstream: Upstream) -> TopicOffsets:
        client, conf, topic = self._target(upstream)
        admin = AdminClient(conf)

        def timeout() -> float:  # each request: the time left, at most the client's own timeout
            return context.time_left(upstream.label, client.timeout_seconds)

        try:
            partitions = self._partitions(admin, upstream, topic, timeout())
            earliest = self._offsets(admin, topic, partitions, OffsetSpec.earliest(), timeout())
            end = self._offsets(admin, topic, partitions, OffsetSpec.latest(), timeout())
        except KafkaException as exc:
            if context.expired:
                raise context.timed_out(upstream.label) from exc
            raise SensorError(
                f"{upstream.label}: cannot read offsets of {topic} from {client.bootstrap_servers} "
                f"(heartbeat.yml's {client.where}): {exc.args[0].str()}"
            ) from exc
        return TopicOffsets(topic, earliest, end)

    def position_at(self, context: CheckContext, upstream: Upstream, at: datetime) -> Watermark:
        """Per partition, the offset of its first message written at or after `at` (the broker's
        `offsets_for_times`; none: its end now): a range from there holds exactly the messages from then on.
        Refused when a partition no longer holds them: its first message from then is its earliest retained
        one, and retention has deleted older ones, which may have been written after `at` too."""
        now = self.read_position(context, upstream)
        product, _ = parse_sensor_id(upstream)
        client = self.client(product)
        conf = client.config_for(upstream, product) | {"group.id": "heartbeat-position", "enable.auto.commit": False}
        at_ms = int((at - datetime(1970, 1, 1, tzinfo=timezone.utc)).total_seconds() * 1000)
        with closing(Consumer(conf)) as consumer:
            try:
                found = consumer.offsets_for_times(
                    [TopicPartition(now.topic, p, at_ms) for p in sorted(now.end)],
                    timeout=context.time_left(upstream.label, client.timeout_seconds),
                )
            except KafkaException as exc:
                if context.expired:
                    raise context.timed_out(upstream.label) from exc
                raise SensorError(
                    f"{upstream.label}: cannot look up offsets for {at:%Y-%m-%d %H:%M:%S} UTC in {now.topic} "
                    f"from {client.bootstrap_servers}: {exc.args[0].str()}"
                ) from exc
        return offsets_at(upstream, now, {tp.partition: int(tp.offset) for tp in found}, at)

    @staticmethod
    def _partitions(admin: AdminClient, upstream: Upstream, topic: str, timeout: float) -> list[int]:
        metadata = admin.list_topics(topic, timeout=timeout).topics.get(topic)
        if metadata is None or metadata.error is not None or not metadata.partitions:
            cause = metadata.error.str() if metadata is not None and metadata.error else "no partitions"
            raise SensorError(f"{upstream.label}: topic {topic} is not available: {cause}")
        return sorted(metadata.partitions)

    @staticmethod
    def _offsets(
        admin: AdminClient, topic: str, partitions: list[int], spec: OffsetSpec, timeout: float
    ) -> dict[int, int]:
        futures = admin.list_offsets({TopicPartition(topic, p): spec for p in partitions}, request_timeout=timeout)
        return {tp.partition: int(future.result().offset) for tp, future in futures.items()}

    def detect(self, upstream: Upstream, position: TopicOffsets, since: Watermark | None) -> Detection:
        ranges = self.ranges(position, since)
        if not ranges:
            return NothingNew("no partition's end offset is beyond the watermark")
        changes = {
            "operation": "APPEND",
            "topic": position.topic,
            "partitions": ranges,
            "message_count": sum(r["to"] - r["from"] for r in ranges),
        }
        return NewData(watermark=position.watermark, changes=changes)

    @staticmethod
    def ranges(offsets: TopicOffsets, since: Watermark | None) -> list[dict[str, int | bool]]:
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

    def new_data_frame(
        self, context: CheckContext, upstream: Upstream, position: TopicOffsets, since: Watermark | None
    ) -> DataFrame:
        """The first `max_messages` new messages (a job's range reads them all: read_range)."""
        with closing(self.new_data_pages(context, upstream, position, since)) as pages:
            return next(pages)

    def new_data_pages(
        self, context: CheckContext, upstream: Upstream, position: TopicOffsets, since: Watermark | None
    ) -> Generator[DataFrame, None, None]:
        """The new messages, `max_messages` a page, read on by one consumer without a group commit. The
        first page is there even when empty; the pages end with the messages (or the check's deadline)."""
        product, _ = parse_sensor_id(upstream)
        client = self.client(product)
        conf = client.config_for(upstream, product) | {
            "group.id": "heartbeat-sensor",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
        ranges = self.ranges(position, since)
        wanted = {int(r["partition"]): (int(max(r["from"], r.get("expired_before", 0))), int(r["to"])) for r in ranges}
        open_partitions = {p for p, (start, end) in wanted.items() if start < end}
        session = context.session(upstream.label)
        consumer = Consumer(conf)
        try:
            consumer.assign([TopicPartition(position.topic, p, start) for p, (start, _) in wanted.items()])
            while True:
                messages = self._poll(context, consumer, upstream, wanted, client.max_messages, open_partitions)
                yield session.createDataFrame(messages, MESSAGE_SCHEMA)
                if not open_partitions:
                    return
        finally:
            consumer.close()

    @staticmethod
    def _poll(
        context: CheckContext,
        consumer: Consumer,
        upstream: Upstream,
        wanted: dict[int, tuple[int, int]],
        limit: int,
        open_partitions: set[int],
    ) -> list[tuple[Any, ...]]:
        """Consume until every open partition reached its end offset (each is taken out of
        `open_partitions` when it does), `limit` messages were read, or the check's deadline came
        (CheckTimedOut)."""
        rows: list[tuple[Any, ...]] = []
        while open_partitions and len(rows) < limit:
            wait = context.time_left(upstream.label, 1.0)
            for message in consumer.consume(min(500, limit - len(rows)), timeout=wait):
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


# --- a job reading its range (harness.consume) ------------------------------------------------------
def read_range(request: RangeRequest) -> DataFrame:
    """The messages between the offsets, per partition (`from` inclusive, `to` exclusive), read with an
    assigned consumer (no group commit), however many: `max_messages` bounds only preprocess_query's view."""
    unbounded = request.config.sources.kafka.model_copy(update={"max_messages": sys.maxsize})
    sensor = KafkaSensor.from_settings(unbounded)
    now = sensor.read_position(request.context, request.upstream)  # for the earliest offsets still retained
    end = {int(p): int(o) for p, o in request.end.get("offsets", {}).items()}
    position = TopicOffsets(now.topic, {p: now.earliest.get(p, 0) for p in end}, end)
    return sensor.new_data_frame(request.context, request.upstream, position, request.start)


def offsets_at(upstream: Upstream, now: TopicOffsets, found: Mapping[int, int], at: datetime) -> Watermark:
    """The watermark of the offsets the broker found for a time (`found`: per partition the first offset at or
    after it, -1 for none: its end now). PositionUnavailable when a partition's first message from then is
    its earliest retained one and retention has deleted older ones (they may have been from then too)."""
    offsets: dict[str, int] = {}
    for partition in sorted(now.end):
        end, earliest = now.end[partition], now.earliest[partition]
        offset = found.get(partition, -1)
        offset = end if offset < 0 else offset
        if offset == earliest and 0 < earliest < end:
            raise PositionUnavailable(
                f"{upstream.label}: partition {partition} no longer holds the messages from "
                f"{at:%Y-%m-%d %H:%M:%S} UTC: its earliest retained offset is {earliest} (retention deleted the "
                "ones before, which may be from then). Rewind to a later time, or give the offsets with --watermark"
            )
        offsets[str(partition)] = offset
    return {"offsets": offsets}


def position_at(query: PositionQuery) -> Watermark:
    return cast(KafkaSensor, query.sensor).position_at(query.context, query.upstream, query.at)


def build(config: Config, source: SensorSource) -> KafkaSensor:
    return KafkaSensor.from_settings(config.sources.kafka)


DECLARATION = SensorDeclaration(build=build, read_range=read_range, position_at=position_at)
