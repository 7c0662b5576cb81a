"""What one check of one upstream is given: the Spark session (for sources read through Spark) and the
check's deadline.

The deadline is set once, when the check starts (`sensing.check_timeout_seconds` from then). Every
wait inside the check (a Kafka request, a JDBC query timeout, the loop reading Kafka messages) is the
time remaining until it, capped by the source's own setting where it has one, so that a check ends by
its deadline instead of outliving it on an abandoned thread. Spark jobs a check runs are cancelled
at the deadline (`spark_until_deadline`).
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator

from pyspark.sql import SparkSession
from pyspark.sql.utils import is_remote

from harness.core.errors import SensorError

log = logging.getLogger(__name__)

# Clients take timeouts in whole milliseconds (librdkafka, JDBC drivers truncate): a wait given the time
# left can return just before the deadline. A wait that ended this close to it used the time up.
DEADLINE_SLACK_SECONDS = 0.01


class CheckTimedOut(SensorError):
    """A check reached its deadline: reported the same whether the check noticed it itself or was
    abandoned by the sensing loop."""

    def __init__(self, label: str, timeout_seconds: float) -> None:
        super().__init__(f"{label}: check timed out after {timeout_seconds:g}s (sensing.check_timeout_seconds)")


@dataclass(frozen=True)
class CheckContext:
    spark: SparkSession | None  # None where no source needs Spark (direct calls in tests, trigger folders)
    deadline: float  # on `clock`
    timeout_seconds: float  # the whole check's time, from its start to `deadline`
    clock: Callable[[], float] = time.monotonic

    @classmethod
    def starting_now(
        cls, spark: SparkSession | None, timeout_seconds: float, clock: Callable[[], float] = time.monotonic
    ) -> CheckContext:
        return cls(spark, clock() + timeout_seconds, timeout_seconds, clock)

    def remaining(self) -> float:
        """Seconds until the deadline, 0 once it has passed."""
        return max(0.0, self.deadline - self.clock())

    @property
    def expired(self) -> bool:
        """The deadline has passed, or is so near that the wait that just ended used it up."""
        return self.clock() >= self.deadline - DEADLINE_SLACK_SECONDS

    def time_left(self, label: str, cap: float | None = None) -> float:
        """How long the next wait of the check may take: the time remaining, capped by `cap` (a source's
        own timeout setting). CheckTimedOut when the deadline has passed."""
        remaining = self.remaining()
        if remaining <= 0:
            raise self.timed_out(label)
        return min(remaining, cap) if cap is not None else remaining

    def timed_out(self, label: str) -> CheckTimedOut:
        return CheckTimedOut(label, self.timeout_seconds)

    def session(self, label: str) -> SparkSession:
        """The Spark session of the check; a SensorError naming the upstream when there is none."""
        if self.spark is None:
            raise SensorError(f"{label}: this source is read through Spark, but no SparkSession is running")
        return self.spark

    @contextmanager
    def spark_until_deadline(self, label: str) -> Iterator[SparkSession]:
        """The check's session; the Spark work this thread starts inside the block is cancelled at the
        deadline (a tag of this thread, cancelled by a timer)."""
        spark = self.session(label)
        add, cancel, remove = _tags(spark)
        tag = f"heartbeat-check-{uuid.uuid4().hex}"
        try:
            add(tag)
            tagged = True
        except Exception as exc:  # noqa: BLE001 - a Spark without tags: the outer deadline still holds
            log.debug("%s: Spark work cannot be cancelled at the deadline: %s", label, exc)
            tagged = False
        if not tagged:
            yield spark
            return
        timer = threading.Timer(self.remaining(), cancel, args=(tag,))
        timer.daemon = True
        timer.start()
        try:
            yield spark
        finally:
            timer.cancel()
            remove(tag)


def _tags(spark: SparkSession) -> tuple[Callable[[str], object], Callable[[str], object], Callable[[str], object]]:
    """(add, cancel, remove) for a tag of the calling thread's Spark work.

    Spark Connect (serverless, standard access mode, `spark_remote`): the session's operation tags; the
    server interrupts a tag's operations whichever client thread asks. Classic Spark keeps a session tag
    per JVM thread, so the timer's thread could never interrupt it: there the tag is a job tag of the
    classic session's own context (a classic session always has one)."""
    if is_remote():
        return spark.addTag, spark.interruptTag, spark.removeTag
    from pyspark import SparkContext

    jobs = SparkContext.getOrCreate()
    return jobs.addJobTag, jobs.cancelJobsWithTag, jobs.removeJobTag
