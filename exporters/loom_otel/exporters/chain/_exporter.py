"""``ChainedSpanExporter``: the span pipeline for speed, the journal for completeness."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

from opentelemetry.sdk._logs.export import LogRecordExporter, LogRecordExportResult
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from loom_otel.core.journal import (
    Journal,
    chain_hash,
    list_origins,
    local_journals,
    local_origins,
    origin_is_live,
    record_body,
    record_from_event,
)
from loom_otel.core.journal import attributes as attr
from loom_otel.core.runtime import force_flush, renew_after_fork, warn_if_truncating
from loom_otel.exporters.chain._exit import deliver_on_exit
from loom_otel.exporters.chain._inner import RefusedSpanExporter, inner_or_refused
from loom_otel.exporters.chain._logs import beside, build_log_records, logs_from_environment
from loom_otel.exporters.chain._outbox import Outbox
from loom_otel.exporters.chain._reach import endpoint_of, unreachable
from loom_otel.exporters.chain._spans import PROJECT_KEY, RecordSpans, aside_resource, joins_a_trace

__all__ = ["ChainedSpanExporter"]

_logger = logging.getLogger(__name__)

RESEND_AFTER: Final = 30.0
SWEEP_INTERVAL: Final = 1.0
MIN_BACKOFF: Final = 0.25
MAX_BACKOFF: Final = 30.0
BATCH: Final = 512
SHUTDOWN_AFTER_EXIT: Final = 1.0
"""The least time a shutdown that comes after the exit delivery (the tracer provider's own, at exit)
is given: it only checkpoints and sends what the exit delivery left."""


class ChainedSpanExporter(SpanExporter):
    """Forwards every span to ``inner`` and delivers every audit-journal record at least once.

    What the span pipeline loses (the OpenTelemetry SDK's documented behaviour): the ``BatchSpanProcessor`` evicts the
    oldest span when its queue is full and discards a batch whose export failed; OTLP exporters give
    up after ``OTEL_EXPORTER_OTLP_TIMEOUT``; whatever is queued when the process dies is gone; and a
    collector may drop, duplicate or reorder what it was given.

    How the journal makes up for it: every capture was appended to the hash-chained journal (synced)
    before its span event existed. This exporter notes which records (``loom.audit.origin/seq`` on
    span events) the inner exporter acknowledged and keeps a durable per-origin outbox cursor
    (``_outbox``). A background sweeper re-reads the unacknowledged part of the chain and sends each
    record that is owed as a ``loom.audit.record`` span carrying the same event (same attributes,
    same chain fields, same timestamp) in its call's trace, or, for a record with no sampled call to
    join (checkpoints, tombstones, records of unsampled calls), as an OTLP log record carrying that
    event (``_logs``: the log exporter registered under the inner exporter's name, or ``logs``), so
    that no trace list shows it as a trace of its own: at once for records of failed exports and for records no span
    carries (checkpoints), after ``resend_after`` seconds for the others (their span was evicted, or
    is still open: then the resend is an identical duplicate). Failed sends are retried with
    exponential backoff (``MIN_BACKOFF`` .. ``max_backoff``), without a deadline. Chains of dead
    processes in the same journal directory (no writer holds their lock) are delivered from their
    saved cursor, so a crashed process's leftovers reach the downstream through the next process
    or ``loom-otel forward``. ``force_flush`` and ``shutdown`` deliver everything owed within their
    timeout; what remains stays in the outbox for the next process. Duplicates are possible (at least
    once), and ``verify`` accepts identical ones. An event whose chain hash no longer recomputes from
    its attributes (cut short by an attribute length limit, ``_limits``) is not taken as delivered:
    its record is sent again at once, whole, from the journal.

    Whatever the sampler decides: the sweeper runs from construction (a process whose spans are all
    unsampled exports none, yet its records are owed), and when the process ends (``atexit``, before
    the tracer provider's own shutdown; an unhandled ``SIGTERM``: ``_exit``) the span pipeline is
    flushed first, then the exporter delivers what is still owed, within ``EXIT_TIMEOUT`` seconds
    (nothing it needs is built that late: the record spans' resource is made up front). Where nothing
    failed, each record thus arrives once.

    A collector that is not there at exit or shutdown (``_reach``: nothing accepts a connection at the
    inner OTLP exporter's endpoint) is not retried: the exporter says so in one line, naming the
    endpoint and ``loom-otel forward``, shuts the inner exporter down (an export still retrying ends),
    sends nothing more and leaves what is owed in the journal. While the process runs, the same
    question is asked before the first send and after a failed one (``_answers``): an absent collector
    fails a send at once (told in that one line), never through the inner exporter's retries.

    Built with no arguments (the ``loom_chain`` entry point): ``inner`` from ``LOOM_OTEL_CHAIN_INNER``
    and the journal directory of the process's loom-otel configuration. Never raises: failures are
    logged (never with record content) and reported as ``SpanExportResult.FAILURE``.
    """

    def __init__(
        self,
        inner: SpanExporter | None = None,
        *,
        journal: Journal | str | os.PathLike[str] | None = None,
        resend_after: float = RESEND_AFTER,
        sweep_interval: float = SWEEP_INTERVAL,
        max_backoff: float = MAX_BACKOFF,
        batch_size: int = BATCH,
        forward_dead: bool = True,
        logs: LogRecordExporter | None = None,
    ) -> None:
        self._inner = inner if inner is not None else inner_or_refused()
        refused = isinstance(self._inner, RefusedSpanExporter)
        # Refused under zero code (``_inner``): no model call makes records; those of earlier runs wait.
        self._logs = (
            logs if logs is not None or inner is not None or refused else beside(self._inner, logs_from_environment())
        )
        self._directory = None if refused else _journal_directory(journal)
        # A journal given as an object stays alive as long as the exporter: collected, it would keep
        # its chain's lock (an open descriptor) while no longer counting as this process's own chain.
        self._journal = journal if isinstance(journal, Journal) else None
        self._grace_ns = int(resend_after * 1e9)
        self._interval = sweep_interval
        self._max_backoff = max_backoff
        self._batch = max(1, batch_size)
        self._forward_dead = forward_dead
        self._spans = RecordSpans()
        self._warned_cut = False
        self._inner_shut = False
        self._init_runtime_state()
        warn_if_truncating()
        renew_after_fork(self, ChainedSpanExporter._after_fork_in_child)
        deliver_on_exit(self)
        self._ensure_sweeper()

    def _init_runtime_state(self) -> None:
        self._lock = threading.Lock()  # chain state: outboxes
        self._sweep_lock = threading.Lock()  # one sweep at a time (sweeper thread, flush, shutdown)
        self._export_lock = threading.Lock()  # one call into the inner exporter at a time
        self._outboxes: dict[str, Outbox] = {}
        self._done: set[str] = set()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._backoff = 0.0
        self._shutdown = False
        self._exiting = False
        self._exit_deadline: float | None = None
        self._offline: str | None = None
        """The inner exporter's endpoint once it was found unreachable at exit or shutdown."""
        self._probe = True
        """Ask whether the collector answers before the next send (``_answers``)."""
        self._told = False
        self._logs_refused = False
        """Set once the downstream refused log records that it then took as spans."""

    @property
    def inner(self) -> SpanExporter:
        return self._inner

    @property
    def directory(self) -> Path | None:
        """The journal directory whose records this exporter guarantees."""
        return self._directory

    # -- the span path -------------------------------------------------------------------------

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if self._shutdown:
            return SpanExportResult.FAILURE
        marks: dict[str, list[int]] = {}
        cut: dict[str, list[int]] = {}
        try:
            marks, cut = _chain_marks(spans)
            if spans:
                self._spans.use_resource(spans[0].resource)
            result = SpanExportResult.FAILURE if self._offline is not None else self._call_inner(spans)
        except Exception as exc:
            _logger.warning("chained exporter: inner export failed (%s)", type(exc).__name__)
            result = SpanExportResult.FAILURE
        try:
            self._acknowledge(marks, result is SpanExportResult.SUCCESS, cut)
            self._ensure_sweeper()
        except Exception as exc:
            _logger.warning("chained exporter: bookkeeping failed (%s)", type(exc).__name__)
        return result

    def _call_inner(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        with self._export_lock:
            if self._offline is not None or not self._answers():
                return SpanExportResult.FAILURE
            result = self._inner.export(spans)
            self._probe = result is not SpanExportResult.SUCCESS
            return result

    def _answers(self) -> bool:
        """Whether the inner exporter's collector accepts a connection (``_reach``), asked before the
        first send and after a failed one: a collector that is not there costs one refused connection,
        not the inner exporter's retries (OTLP: up to its 10 s timeout, a "Transient error" line each,
        and every other send waiting behind them). What is not sent stays owed in the journal."""
        if not self._probe:
            return True
        endpoint = endpoint_of(self._inner)
        if endpoint is not None and unreachable(endpoint):
            self._tell_unreachable(endpoint)
            return False
        self._probe = False
        return True

    def _acknowledge(self, marks: Mapping[str, list[int]], ok: bool, cut: Mapping[str, list[int]]) -> None:
        """Note what the inner exporter took (``ok``) or not; records whose event was ``cut`` are owed
        at once whatever the result (under the origin they were cut from, when it is known)."""
        if (not marks and not cut) or self._directory is None:
            return
        own = local_origins(self._directory) if cut else frozenset()
        with self._lock:
            for origin, seqs in marks.items():
                outbox = self._outbox(origin)
                if ok:
                    outbox.delivered(seqs)
                else:
                    outbox.undelivered(seqs)
            for origin, seqs in cut.items():
                whole = [o for o in own if o.startswith(origin)]
                if len(whole) == 1:  # else never acknowledged, so resent after the grace period
                    self._outbox(whole[0]).undelivered(seqs)
        if cut and not self._warned_cut:
            self._warned_cut = True
            _logger.warning(
                "chained exporter: span events reached the exporter cut short (an attribute value length "
                "limit below the journal's values?); their records are sent again, whole, from the journal"
            )
        if not ok or cut:
            self._wake.set()

    def _outbox(self, origin: str) -> Outbox:
        outbox = self._outboxes.get(origin)
        if outbox is None:
            assert self._directory is not None
            outbox = self._outboxes[origin] = Outbox(self._directory / origin)
        return outbox

    # -- the journal path ----------------------------------------------------------------------

    def _ensure_sweeper(self) -> None:
        if self._thread is None and self._directory is not None and not (self._shutdown or self._exiting):
            with self._lock:
                if self._thread is None:
                    self._thread = threading.Thread(target=self._sweep_loop, name="loom-otel-chain", daemon=True)
                    self._thread.start()

    def _sweep_loop(self) -> None:
        while not self._stop.is_set():
            try:
                delivered = self._sweep(everything=False)
            except Exception as exc:
                _logger.warning("chained exporter: sweep failed (%s)", type(exc).__name__)
                delivered = False
            if delivered:
                self._backoff = 0.0
                wait = self._interval
            else:
                self._backoff = min(self._max_backoff, max(MIN_BACKOFF, self._backoff * 2))
                wait = self._backoff
            self._wake.wait(wait)
            self._wake.clear()

    def _sweep(self, *, everything: bool, deadline: float | None = None) -> bool:
        """Send what is owed; ``True`` when every send succeeded (``everything``: nothing is left)."""
        with self._sweep_lock:
            return self._sweep_locked(everything=everything, deadline=deadline)

    def _sweep_locked(self, *, everything: bool, deadline: float | None) -> bool:
        directory = self._directory
        if directory is None:
            return True
        own = local_origins(directory)
        ok = True
        for origin in list_origins(directory):
            if origin in self._done:
                continue
            mine = origin in own
            if not mine and (not self._forward_dead or origin_is_live(directory / origin)):
                continue
            with self._lock:
                outbox = self._outbox(origin)
                if not mine and not outbox.claim():
                    continue
            if not self._drain(outbox, everything=everything or not mine, live=mine, deadline=deadline):
                ok = False
                break
            if not mine:
                with self._lock:  # a dead chain does not grow: drained is done
                    outbox.save()
                    outbox.complete = True
                    outbox.release()
                    self._done.add(origin)
        with self._lock:
            for outbox in self._outboxes.values():
                outbox.save()
        return ok

    def _drain(self, outbox: Outbox, *, everything: bool, live: bool, deadline: float | None) -> bool:
        while True:
            with self._lock:
                now = time.time_ns()
                batch = []
                try:
                    for record in outbox.owed(now, self._grace_ns, everything=everything, live=live, deadline=deadline):
                        batch.append(record)
                        if len(batch) >= self._batch:
                            break
                except TimeoutError:
                    return False
            if not batch:
                return True
            if deadline is not None and time.monotonic() >= deadline:
                return False
            delivered, ok = self._send(batch)
            with self._lock:
                outbox.delivered(delivered)
            if not ok:
                return False
            if len(batch) < self._batch:
                return True

    def _send(self, batch: Sequence[Mapping[str, object]]) -> tuple[list[int], bool]:
        """Send records from the journal: as ``loom.audit.record`` spans in their call's trace when it
        was sampled, the others (checkpoints, tombstones, records of unsampled calls) as log records
        (``_logs``; as root spans filed under the audit project, ``_spans.aside_resource``, when there is
        no log exporter, or the downstream refused logs and took them as spans). The seqs the downstream
        took, and whether it took them all."""
        in_trace: list[Mapping[str, object]] = []
        no_trace: list[Mapping[str, object]] = []
        for record in batch:
            (in_trace if joins_a_trace(record) else no_trace).append(record)
        delivered: list[int] = []
        ok = True
        if no_trace:
            use_logs = self._logs is not None and not self._logs_refused
            if use_logs and self._send_logs(no_trace):
                delivered += _seqs(no_trace)
            elif self._send_spans(no_trace, aside=True):
                delivered += _seqs(no_trace)
                if use_logs:
                    self._refuse_logs()
            else:
                ok = False
        if in_trace:
            if self._send_spans(in_trace):
                delivered += _seqs(in_trace)
            else:
                ok = False
        return delivered, ok

    def _send_spans(self, records: Sequence[Mapping[str, object]], *, aside: bool = False) -> bool:
        try:
            return self._call_inner(self._spans.build(records, aside=aside)) is SpanExportResult.SUCCESS
        except Exception as exc:
            _logger.warning("chained exporter: resend failed (%s)", type(exc).__name__)
            return False

    def _send_logs(self, records: Sequence[Mapping[str, object]]) -> bool:
        logs = self._logs
        if logs is None:
            return False
        try:
            built = build_log_records(records, self._spans.resource)
            with self._export_lock:  # as spans are: an absent collector costs one refused connection
                if self._offline is not None or not self._answers():
                    return False
                ok = logs.export(built) is LogRecordExportResult.SUCCESS
                self._probe = not ok
                return ok
        except Exception as exc:
            _logger.warning("chained exporter: sending log records failed (%s)", type(exc).__name__)
            return False

    def _refuse_logs(self) -> None:
        """The downstream took as spans the records it had just refused as log records: it does not
        take logs (Arize Phoenix without a collector in front). Say so once; send spans from now on."""
        self._logs_refused = True
        _logger.warning(
            "loom-otel: the collector at %s refuses OTLP log records; checkpoints and tombstones are sent as "
            "root spans filed under the project %r (put an OpenTelemetry Collector in front to send them as logs)",
            endpoint_of(self._inner) or type(self._inner).__name__,
            aside_resource(self._spans.resource).attributes.get(PROJECT_KEY),
        )

    # -- lifecycle -----------------------------------------------------------------------------

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Make the process's captures durable (``loom_otel.core.force_flush``), deliver every record owed
        so far (grace ignored), then flush ``inner``."""
        if self._shutdown:
            return False
        deadline = time.monotonic() + timeout_millis / 1000
        try:
            durable = force_flush(timeout_millis)
            delivered = self._deliver_all(deadline)
            left = max(1, int((deadline - time.monotonic()) * 1000))
            return bool(self._inner.force_flush(left)) and delivered and durable
        except Exception as exc:
            _logger.warning("chained exporter: flush failed (%s)", type(exc).__name__)
            return False

    def forward(self, timeout_millis: int = 60000) -> bool:
        """Deliver everything owed now (this process's chains and dead ones), retrying with backoff
        for up to ``timeout_millis``; ``True`` when nothing is left (``loom-otel forward``)."""
        try:
            return self._deliver_all(time.monotonic() + timeout_millis / 1000)
        except Exception as exc:
            _logger.warning("chained exporter: forward failed (%s)", type(exc).__name__)
            return False

    def _checkpoint(self) -> None:
        """Checkpoint this process's chains: their tails are anchored, delivered now or later."""
        for journal in local_journals(self._directory) if self._directory is not None else ():
            try:
                journal.checkpoint()
            except OSError as exc:
                _logger.warning("chained exporter: checkpoint failed (%s)", type(exc).__name__)

    def _deliver_all(self, deadline: float) -> bool:
        self._checkpoint()
        backoff = MIN_BACKOFF
        while True:
            if self._sweep(everything=True, deadline=deadline):
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            time.sleep(min(backoff, left))
            backoff = min(self._max_backoff, backoff * 2)

    def shutdown(self, timeout_millis: int = 30000) -> None:
        """Checkpoint the process's chains, deliver what is owed within ``timeout_millis``, leave the
        rest in the outbox (the next process or ``loom-otel forward`` sends it), shut ``inner`` down.
        Idempotent."""
        if self._shutdown:
            return
        deadline = time.monotonic() + timeout_millis / 1000
        if self._exit_deadline is not None:  # the tracer provider's shutdown after the exit delivery
            deadline = min(deadline, max(self._exit_deadline, time.monotonic() + SHUTDOWN_AFTER_EXIT))
        try:
            self._stop_sweeper(deadline)
            self._check_downstream()
            self._make_durable_and_deliver(deadline, "shutdown")
        except Exception as exc:
            _logger.warning("chained exporter: shutdown failed (%s)", type(exc).__name__)
        finally:
            self._shutdown = True
            with self._lock:
                for outbox in self._outboxes.values():
                    outbox.save()
                    outbox.release()
            self._shut_inner()

    def prepare_exit(self, deadline: float) -> None:
        """At exit, before the span pipeline is flushed (``_exit``): stop the sweeper (a resend now
        could race the flush and send a record twice) and find out whether the collector answers.
        The span path stays open: the flush, and the tracer provider's shutdown, still export."""
        if self._shutdown:
            return
        self._exiting, self._exit_deadline = True, deadline
        self._stop_sweeper(deadline)
        self._check_downstream()

    def deliver_at_exit(self, deadline: float) -> None:
        """At exit, after the span pipeline was flushed: deliver what is still owed before ``deadline``."""
        if not self._shutdown:
            self._make_durable_and_deliver(deadline, "delivery at exit")

    def _stop_sweeper(self, deadline: float) -> None:
        self._stop.set()
        self._wake.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(max(0.0, deadline - time.monotonic()))

    def _check_downstream(self) -> None:
        """Once per exporter: if nothing accepts a connection at the inner exporter's endpoint, stop
        sending to it and say, in one line, where what is owed stays and how to send it later."""
        if self._offline is not None:
            return
        endpoint = endpoint_of(self._inner)
        if endpoint is None or not unreachable(endpoint):
            return
        self._offline = endpoint
        self._tell_unreachable(endpoint)
        self._shut_inner()  # ends an export still retrying (the OTLP exporters wait on their shutdown)

    def _shut_inner(self) -> None:
        with self._lock:
            if self._inner_shut:
                return
            self._inner_shut = True
        for exporter in (self._inner, self._logs):
            try:
                if exporter is not None:
                    exporter.shutdown()
            except Exception as exc:
                _logger.warning("chained exporter: inner shutdown failed (%s)", type(exc).__name__)

    def _tell_unreachable(self, endpoint: str) -> None:
        """Say once, in one line, that the collector at ``endpoint`` does not answer and where what is
        owed stays (at exit, or at the first send it refused during the run)."""
        with self._lock:
            if self._told:
                return
            self._told = True
        if self._directory is None:
            _logger.warning("loom-otel: the collector at %s is unreachable; spans of this run were not sent", endpoint)
        else:
            _logger.warning(
                "loom-otel: the collector at %s is unreachable; the audit records owed stay in the journal: "
                "send them with `loom-otel forward %s`",
                endpoint,
                self._directory,
            )

    def _make_durable_and_deliver(self, deadline: float, what: str) -> None:
        """Make the captures durable, then deliver everything owed before ``deadline`` (nothing when
        the collector is unreachable); never raises."""
        try:
            force_flush(max(0, int((deadline - time.monotonic()) * 1000)))  # blobs and records durable
            if self._offline is not None:
                self._checkpoint()  # for `loom-otel forward`
                return
            if self._directory is None:
                return
            if not self._deliver_all(deadline):
                _logger.warning("chained exporter: %s timed out; undelivered records stay in the outbox", what)
        except Exception as exc:
            _logger.warning("chained exporter: %s failed (%s)", what, type(exc).__name__)

    def _after_fork_in_child(self) -> None:
        for outbox in self._outboxes.values():
            outbox.release()
        self._init_runtime_state()


def _journal_directory(journal: Journal | str | os.PathLike[str] | None) -> Path | None:
    if isinstance(journal, Journal):
        return journal.directory
    if journal is not None:
        return Path(journal).expanduser().absolute()
    from loom_otel.core.exceptions import ReasoningConfigError
    from loom_otel.core.runtime import current_runtime, refuse, under_zero_code

    try:
        return current_runtime().journal_dir
    except Exception as exc:
        if isinstance(exc, ReasoningConfigError) and under_zero_code():
            refuse(exc)  # told once; the instrumentors make every model call raise it
            return None
        _logger.warning("chained exporter: no journal configuration (%s); forwarding spans only", type(exc).__name__)
        return None


def _seqs(records: Sequence[Mapping[str, object]]) -> list[int]:
    return [s for s in (r.get("seq") for r in records) if isinstance(s, int) and not isinstance(s, bool)]


def _chain_marks(spans: Sequence[ReadableSpan]) -> tuple[dict[str, list[int]], dict[str, list[int]]]:
    """``origin -> [seq]`` of the journal records the spans' events carry whole, and of those whose
    event was altered on the way (its hash does not recompute: cut by an attribute length limit)."""
    whole: dict[str, list[int]] = {}
    cut: dict[str, list[int]] = {}
    for span in spans:
        for event in span.events:
            attributes = event.attributes
            if not attributes:
                continue
            origin, seq = attributes.get(attr.AUDIT_ORIGIN), attributes.get(attr.AUDIT_SEQ)
            if isinstance(origin, str) and isinstance(seq, int) and not isinstance(seq, bool):
                marks = whole if _is_whole(event.name, attributes, event.timestamp) else cut
                marks.setdefault(origin, []).append(seq)
    return whole, cut


def _is_whole(name: str, attributes: Mapping[str, object], time_ns: int) -> bool:
    """Whether the record an event carries still hashes to the hash it declares."""
    record = record_from_event(name, attributes, time_ns)
    if record is None:
        return False
    try:
        return chain_hash(str(record["prev"]), record_body(record)) == record["hash"]
    except (ValueError, TypeError):  # a cut ``prev`` is no longer hex
        return False
