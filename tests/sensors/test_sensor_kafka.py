"""kafka sensor against librdkafka's mock cluster, with the real confluent-kafka client."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from harness.core.errors import ConfigError, SensorError
from harness.core.vocabulary import EventType, SensorSource
from harness.sensors import build_registry
from harness.sensors.base import NewData, NothingNew, Upstream
from harness.sensors.context import CheckTimedOut
from harness.sensors.kafka import KafkaSensor, TopicOffsets
from harness.tick.sensing import sense
from tests.fixtures_sources import check_context, sensed_row, sensor_config
from tests.kafka_mock import MOCK_PARTITIONS, MockKafka
from tests.postgres import free_port


def kafka_sensor(tmp_path: Path, kafka: MockKafka, **settings: object) -> KafkaSensor:
    return KafkaSensor.from_settings(
        sensor_config(tmp_path, kafka={"bootstrap_servers": kafka.bootstrap_servers, **settings}).sources.kafka
    )


def read(sensor: KafkaSensor, upstream: Upstream, timeout: float = 10) -> TopicOffsets:
    """One check's read of the topic, with `timeout` seconds until the check's deadline."""
    return sensor.read_position(check_context(timeout=timeout), upstream)


def test_kafka_topic_without_new_messages_is_nothing_new(kafka: MockKafka, tmp_path: Path) -> None:
    # GIVEN a row that has seen every message of a topic
    kafka.produce("orders.quiet", "a", "b")
    sensor, upstream = kafka_sensor(tmp_path, kafka), Upstream(SensorSource.KAFKA, "shop: orders.quiet")
    seen = read(sensor, upstream).watermark

    # WHEN it is checked again
    detection = sensor.detect(upstream, read(sensor, upstream), seen)

    # THEN nothing is new
    assert isinstance(detection, NothingNew)


def test_kafka_empty_topic_is_nothing_new_for_a_row_never_sensed(kafka: MockKafka, tmp_path: Path) -> None:
    # GIVEN an existing topic without messages
    kafka.create_topic("orders.empty")
    sensor, upstream = kafka_sensor(tmp_path, kafka), Upstream(SensorSource.KAFKA, "orders.empty")

    # WHEN a row never sensed is checked, THEN nothing is new and the watermark covers every partition
    position = read(sensor, upstream)
    assert isinstance(sensor.detect(upstream, position, None), NothingNew)
    assert position.watermark == {"offsets": {str(p): 0 for p in range(MOCK_PARTITIONS)}}


def test_kafka_new_messages_are_new_with_per_partition_offset_ranges(kafka: MockKafka, tmp_path: Path) -> None:
    # GIVEN a row that has seen 2 messages on partition 0
    kafka.produce("orders.grow", "a", "b", partition=0)
    sensor, upstream = kafka_sensor(tmp_path, kafka), Upstream(SensorSource.KAFKA, "shop: orders.grow")
    seen = read(sensor, upstream).watermark

    # WHEN 3 messages land on partition 0 and 1 on partition 2
    kafka.produce("orders.grow", "c", "d", "e", partition=0)
    kafka.produce("orders.grow", "f", partition=2)
    detection = sensor.detect(upstream, read(sensor, upstream), seen)

    # THEN the event carries the offset range of each partition that grew
    assert isinstance(detection, NewData)
    assert detection.changes["partitions"] == [
        {"partition": 0, "from": 2, "to": 5},
        {"partition": 2, "from": 0, "to": 1},
    ]
    assert detection.changes["message_count"] == 4 and detection.changes["topic"] == "orders.grow"
    assert detection.watermark == {"offsets": {"0": 5, "1": 0, "2": 1, "3": 0}}


def test_kafka_new_data_frame_holds_the_new_messages_bounded_by_max_messages(
    spark: SparkSession, kafka: MockKafka, tmp_path: Path
) -> None:
    # GIVEN a row at offset 1 of partition 1, then 4 new messages, and max_messages 3
    kafka.produce("orders.frame", "old", partition=1)
    kafka.produce("orders.frame", "m1", "m2", "m3", "m4", partition=1, key="k")
    sensor = kafka_sensor(tmp_path, kafka, max_messages=3)
    upstream = Upstream(SensorSource.KAFKA, "orders.frame")
    since = {"offsets": {"0": 0, "1": 1, "2": 0, "3": 0}}

    # WHEN the new data frame is read
    frame = sensor.new_data_frame(check_context(spark), upstream, read(sensor, upstream), since)

    # THEN it holds the first 3 new messages with Kafka's columns
    rows = frame.orderBy("offset").collect()
    assert frame.columns == ["key", "value", "topic", "partition", "offset", "timestamp"]
    assert [(bytes(r["value"]), r["offset"], r["partition"]) for r in rows] == [
        (b"m1", 1, 1),
        (b"m2", 2, 1),
        (b"m3", 3, 1),
    ]
    assert bytes(rows[0]["key"]) == b"k" and rows[0]["timestamp"] is not None


def test_kafka_preprocess_query_reads_the_new_messages_page_by_page_until_one_matches(
    spark: SparkSession, kafka: MockKafka, tmp_path: Path
) -> None:
    # GIVEN max_messages 2, and 4 new messages on one partition of which only the last is a batch's end
    kafka.produce("orders.marker", "small1", "small2", "small3", "big1", partition=0)
    config = sensor_config(tmp_path, kafka={"bootstrap_servers": kafka.bootstrap_servers, "max_messages": 2})
    since = json.dumps({"offsets": {str(p): 0 for p in range(MOCK_PARTITIONS)}})
    query = "SELECT 1 FROM sensor_new_data WHERE CAST(value AS STRING) LIKE 'big%'"
    marker = sensed_row("kafka", "orders.marker", "job_m", preprocess_query=query, watermark=since)
    never = sensed_row(
        "kafka", "orders.marker", "job_n", preprocess_query=query.replace("big", "huge"), watermark=since
    )

    # WHEN the rows are sensed
    outcome = sense([marker, never], build_registry(config), spark, config)

    # THEN the match in the second page is new data; a query matching no message read every page to say so
    assert [(e.row.trigger_job_id, e.event_type) for e in outcome.events if e.row] == [
        ("job_m", EventType.DATA_CHANGED)
    ]
    assert outcome.nothing_new[never.key.ref] == "new data found, but preprocess_query returned no row"


def test_kafka_unreachable_broker_is_a_sensor_error_naming_the_upstream(tmp_path: Path) -> None:
    # GIVEN brokers on a closed port
    sensor = KafkaSensor.from_settings(
        sensor_config(
            tmp_path, kafka={"bootstrap_servers": f"127.0.0.1:{free_port()}", "timeout_seconds": 2}
        ).sources.kafka
    )

    # WHEN it is checked, THEN the error names the upstream, the brokers and the heartbeat.yml key to check
    with pytest.raises(
        SensorError,
        match=r"^kafka:shop: orders: cannot read offsets of orders from 127.0.0.1:\d+ \(heartbeat.yml's kafka\): ",
    ):
        read(sensor, Upstream(SensorSource.KAFKA, "shop: orders"), timeout=20)


def test_kafka_product_settings_override_the_section(
    kafka: MockKafka, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN default brokers that are down, and a product with its own brokers and SASL credentials
    monkeypatch.setenv("HB_TEST_KAFKA_PASSWORD", "kafka-secret-5521")
    sensor = KafkaSensor.from_settings(
        sensor_config(
            tmp_path,
            kafka={
                "bootstrap_servers": f"127.0.0.1:{free_port()}",
                "products": {
                    "shop": {
                        "bootstrap_servers": kafka.bootstrap_servers,
                        "security_protocol": "sasl_ssl",
                        "sasl_mechanism": "SCRAM-SHA-512",
                        "username": "hb",
                        "password_env": "HB_TEST_KAFKA_PASSWORD",
                        "ssl_ca_location": "/etc/ssl/certs/ca.pem",
                    }
                },
            },
        ).sources.kafka
    )

    # WHEN the client configuration for the product is built
    conf = sensor.client("shop").config_for(Upstream(SensorSource.KAFKA, "shop: orders"), "shop")

    # THEN it uses the product's brokers, protocol, mechanism, credentials from the environment and CA
    assert conf["bootstrap.servers"] == kafka.bootstrap_servers and conf["security.protocol"] == "SASL_SSL"
    assert (conf["sasl.mechanism"], conf["sasl.username"], conf["sasl.password"]) == (
        "SCRAM-SHA-512",
        "hb",
        "kafka-secret-5521",
    )
    assert conf["ssl.ca.location"] == "/etc/ssl/certs/ca.pem"


def test_kafka_password_in_the_config_file_is_refused(tmp_path: Path) -> None:
    # GIVEN a password written into heartbeat.yml instead of named by password_env
    # WHEN the configuration is loaded, THEN it is refused, pointing at the *_env key
    with pytest.raises(
        ConfigError,
        match=r"kafka.password: secrets never go in heartbeat.yml; name the "
        r"environment variable that holds it instead \(password_env",
    ):
        sensor_config(tmp_path, kafka={"bootstrap_servers": "127.0.0.1:9", "password": "oops"})


def test_kafka_requests_end_by_the_check_deadline_before_the_configured_timeout(tmp_path: Path) -> None:
    # GIVEN a broker that accepts connections and never answers (a closed port fails at once instead of
    # timing out), a per-request timeout of 30 s, and a check with 2 s left
    with socket.create_server(("127.0.0.1", 0)) as silent:
        sensor = KafkaSensor.from_settings(
            sensor_config(
                tmp_path, kafka={"bootstrap_servers": f"127.0.0.1:{silent.getsockname()[1]}", "timeout_seconds": 30}
            ).sources.kafka
        )

        # WHEN it is checked
        started = time.monotonic()
        with pytest.raises(
            CheckTimedOut, match=r"^kafka:orders: check timed out after 2s \(sensing.check_timeout_seconds\)$"
        ):
            read(sensor, Upstream(SensorSource.KAFKA, "orders"), timeout=2)

        # THEN the request waited for the time left, not for its own 30 s
        assert time.monotonic() - started < 10


def test_kafka_message_reading_ends_by_the_check_deadline(
    spark: SparkSession, kafka: MockKafka, tmp_path: Path
) -> None:
    # GIVEN a topic with new messages whose position was read, and a check whose deadline has passed
    kafka.produce("orders.late", "m1", partition=0)
    sensor, upstream = kafka_sensor(tmp_path, kafka), Upstream(SensorSource.KAFKA, "orders.late")
    position = read(sensor, upstream)

    # WHEN its new messages are read for preprocess_query, THEN the check ends as timed out
    with pytest.raises(CheckTimedOut, match=r"^kafka:orders.late: check timed out after 0s"):
        sensor.new_data_frame(check_context(spark, timeout=0), upstream, position, None)


def test_kafka_unknown_librdkafka_property_stops_the_sensor_being_built(tmp_path: Path) -> None:
    # GIVEN a product whose properties hold a misspelt librdkafka property
    config = sensor_config(
        tmp_path,
        kafka={
            "bootstrap_servers": "127.0.0.1:9",
            "products": {"shop": {"properties": {"request.timeout.msx": "500"}}},
        },
    )

    # WHEN the sensor is built, THEN librdkafka's refusal names the key in heartbeat.yml
    with pytest.raises(
        ConfigError,
        match=r"^kafka.products.shop.properties.request.timeout.msx: refused by "
        r'librdkafka: No such configuration property: "request.timeout.msx"',
    ):
        KafkaSensor.from_settings(config.sources.kafka)
