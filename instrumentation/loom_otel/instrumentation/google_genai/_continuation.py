"""Gemini ``generateContent`` <-> the continuation rule (``loom_otel.core._continuation._rule``).

The rule is the core's; this module only maps request and response shapes onto its block model
(``_transcript``) and back. Gemini specifics:

- a block is bound to provider, system instruction, tools and every earlier content, not to the model;
- a function call's signature is never dropped; a function call of the current turn (after the last
  user content that is not only function responses) sent without its ``thought_signature`` gets the
  recorded one back (matched by call id, else name, canonical arguments and rank in its step): only
  the call that carried it (with parallel calls, the first) gets one;
- thought runs and text-part signatures whose binding no longer matches are dropped (always valid for
  Gemini: it validates only the current turn's function-call signatures);
- ``transcript="redact"``: thought text is blanked in every response and chunk the application gets
  (chat history keeps those same objects) and put back from the store on the way out, split over
  the parts it came in.

Requests are planned per HTTP request (each hop of automatic function calling); the bindings of every
hop's response are recorded once the call's reasoning is captured.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Sequence
from typing import Any, Final

from loom_otel.core import Reasoning
from loom_otel.core.vendor import (
    Block,
    Capture,
    Continuation,
    ModelCall,
    Plan,
    Produced,
    RoundBlock,
    Runtime,
    StreamAccumulator,
)
from loom_otel.core.vendor_helpers import ExecutionScope, bindings_for, readable, record_digest
from loom_otel.instrumentation.google_genai import _transcript as tr
from loom_otel.instrumentation.google_genai._extractors import resumes
from loom_otel.instrumentation.google_genai._readable import withhold_thoughts
from loom_otel.instrumentation.google_genai._stream_layers import Scrubbing

__all__ = ["GeminiContinuation", "GeminiSession"]

_MAX_SIGNATURES: Final = 65536


def _blank(contents: Sequence[Any]) -> None:
    for content in contents:
        for part in getattr(content, "parts", None) or ():
            if getattr(part, "thought", False) and part.text:
                part.text = ""


class GeminiContinuation:
    """The continuation layer for one Google GenAI instrumentor."""

    def __init__(self, runtime: Runtime) -> None:
        bindings = bindings_for(runtime.journal_dir, durability=runtime.journal_durability)
        self.rule = Continuation(bindings, runtime.texts, runtime.discards)
        self.redact = runtime.transcript == "redact"
        self._keyed = runtime.digest != "sha256"
        self._signatures: dict[str, bytes] = {}
        """Function-call signatures this process saw produced (memory only, never written)."""

    def session(self, provider: str, produced: list[Any]) -> GeminiSession:
        return GeminiSession(self, provider, produced)

    def thread(self, contents: list[tuple[str, list[tr.Part]]], scope: ExecutionScope | None) -> list[tr.Part]:
        """Give each current-turn function call that lost its signature the recorded one back, when it was
        recorded for the call's tenant (and execution and principal, when the call names them; for no
        tenant, without a scope): a signature is a secret, found here by a visible call."""
        start = 0
        for c in range(len(contents) - 1, -1, -1):
            role, parts = contents[c]
            if role == "user" and any(b'"function_response"' not in p.plain for p in parts):
                start = c
                break
        restored: list[tr.Part] = []
        rank, previous = 0, ""
        for role, parts in contents[start + 1 :]:
            if role != "model":
                previous = role
                continue
            if previous != "model":
                rank = 0
            previous = role
            for part in parts:
                if part.call is None:
                    continue
                if part.signature is None:
                    found = next(
                        (s for k in tr.call_keys(part.call, rank) if (s := self._signatures.get(k)) is not None), None
                    )
                    if found is not None and self._may_restore(found, scope):
                        part.signature, part.restored = found, True
                        restored.append(part)
                rank += 1
        return restored

    def _may_restore(self, signature: bytes, scope: ExecutionScope | None) -> bool:
        record = self.rule.bindings.block(tr.signature_key(signature))
        if record is None:
            return False
        return record.tenant is None if scope is None else readable(record, scope)

    def missing_thoughts(self, contents: list[tuple[str, list[tr.Part]]]) -> dict[int, list[tuple[int, list[tr.Part]]]]:
        """Put back the thought runs a framework removed while their signature stays (pydantic-ai drops
        the thought parts redact mode emptied): a model content with no thought part whose signed part
        follows a recorded thought run gets that run back, without text, before the signed part (after
        the content's previous signed part, where the vendor put it). The rule then treats it as a run
        the application emptied: its text is put back only if its binding holds, from the call's
        execution. Inserted into ``contents``; returns content index -> (original part index, parts
        inserted before it)."""
        out: dict[int, list[tuple[int, list[tr.Part]]]] = {}
        lookup = self.rule.bindings.block
        for start, step in _model_steps(contents):
            if any(part.thought for _, _, part in step):
                continue
            at = start  # the step's start, else right after its previous signed part
            for c, index, part in step:
                if part.signature is None:
                    continue
                record = lookup(tr.thought_key(part.signature))
                if record is not None and record.ref and record.text_digest:
                    places = out.setdefault(at[0], [])
                    taken = sum(len(run) for _, run in places)  # each inserted part its own (negative) place
                    run = [tr.thought_part((at[0], -1 - taken - k), "") for k in range(len(record.split) or 1)]
                    places.append((at[1], run))
                at = (c, index + 1)
        for c, places in out.items():
            parts = contents[c][1]
            for index, run in sorted(places, key=lambda place: place[0], reverse=True):
                parts[index:index] = run
        return out

    def remember(self, parts: Sequence[tr.Part]) -> None:
        rank = 0
        for part in parts:
            if part.call is None:
                continue
            if part.signature is not None:
                if len(self._signatures) > _MAX_SIGNATURES:
                    self._signatures.clear()
                for key in tr.call_keys(part.call, rank):
                    self._signatures[key] = part.signature
            rank += 1

    def record(
        self,
        plan: Plan,
        parts: Sequence[tr.Part],
        capture: Capture | None,
        reasonings: Sequence[Reasoning],
        call: ModelCall,
    ) -> None:
        """Remember the binding of every block of one response to the request ``plan`` saw (``capture``
        of the call's ``reasonings``, in their order)."""
        captured = capture.parts if capture is not None else ()
        texts = [r.text for r in reasonings]
        items: list[bytes | Produced] = []
        for step in tr.step_items(parts):
            item = step.item
            if isinstance(item, bytes):
                items.append(item)
                continue
            assert step.signature is not None
            token = base64.b64encode(step.signature).decode()
            digest: str | None = None
            ref: str | None = None
            split: tuple[int, ...] = ()
            if step.kind == tr.THOUGHT and item.text:
                same = [p for p, text in zip(captured, texts, strict=False) if p.text_ref and text == item.text]
                signed = [p for p in captured if p.text_ref and p.signature == step.signature]
                part = next(iter((*same, *signed)), None)
                ref = part.text_ref if part is not None else None
                # the digest of this text: the captured one where the text is the same (no second SHA-256)
                digest = record_digest(item.text, part if self._keyed else next(iter(same), None), keyed=self._keyed)
                if len(step.parts) > 1:
                    split = tuple(len(p.text or "") for p in step.parts)
            items.append(Produced(item.key, item.canon, step.kind, token, digest, ref, split))
        self.rule.record(plan, tr.MODEL_HEAD, items, (), call.identity)
        self.remember(parts)


class _RequestPlan:
    """One HTTP request's plan and the parts its response produced: a slice of the call's produced parts
    (the accumulator keeps them in arrival order), read once, when the bindings are recorded (or before
    redaction blanks them)."""

    __slots__ = ("_end", "_parts", "_produced", "_start", "plan")

    def __init__(self, plan: Plan, produced: list[Any]) -> None:
        self.plan = plan
        self._produced = produced
        self._start = len(produced)
        self._end: int | None = None
        self._parts: list[tr.Part] = []

    def close(self) -> None:
        """The next request starts: what arrives from now on is its response."""
        self._end = len(self._produced)

    def parts(self) -> list[tr.Part]:
        end = len(self._produced) if self._end is None else self._end
        read = self._start + len(self._parts)
        if read < end:
            base = len(self._parts)
            self._parts.extend(tr.read_part(raw, (0, base + n)) for n, raw in enumerate(self._produced[read:end]))
        return self._parts


class GeminiSession:
    """The continuation state of one public call (all its HTTP requests)."""

    def __init__(self, adapter: GeminiContinuation, provider: str, produced: list[Any]) -> None:
        self.adapter = adapter
        self.provider = provider
        self.hops: list[_RequestPlan] = []
        self._produced = produced
        """The call's produced parts (candidate 0, every hop, in arrival order), kept by its accumulator."""
        self.pieces: list[str] = []
        """Each thought text put into a request part: a text put back over several parts goes in pieces,
        and an error quoting the request quotes them one by one."""

    def _begin(self, plan: Plan) -> None:
        if self.hops:
            self.hops[-1].close()
        self.hops.append(_RequestPlan(plan, self._produced))

    def prepare(self, call: ModelCall, kwargs: dict[str, Any]) -> dict[str, Any]:
        """Apply the rule to one HTTP request of ``call`` before the SDK serializes it; returns the kwargs
        to send.

        Raises ``ReasoningContinuationError`` when the store fails while text is being put back.
        """
        resuming = bool(self.hops) and resumes(kwargs)
        contents = tr.read_contents(kwargs.get("contents"))
        if contents is None:
            plan = self.adapter.rule.plan(tr.header_of(self.provider, kwargs), [], call.request_scope())
            call.join(plan.lineage)
            if not resuming:
                self._begin(plan)
            return kwargs
        restored = self.adapter.thread(contents, call.request_scope())
        inserted = self.adapter.missing_thoughts(contents)
        views, layout = tr.views(contents)
        plan = self.adapter.rule.plan(tr.header_of(self.provider, kwargs), views, call.request_scope())
        call.join(plan.lineage)  # the first request decides the call's execution
        for part in restored:
            i, j = _position(layout, part)
            block = layout[i][j].item
            assert isinstance(block, Block)
            token = base64.b64encode(part.signature or b"").decode()
            plan.restored.setdefault(i, []).append(
                (j, RoundBlock(j, tr.SIGNATURE, block.key, block.canon, token), None)
            )
        if not resuming:
            self._begin(plan)
            plan.emit(call, lambda i, j: _path(layout, i, j))
        if plan.changes or inserted:
            contents = _rebuild(self.adapter, kwargs["contents"], layout, plan, inserted, pieces=self.pieces)
            kwargs = {**kwargs, "contents": contents}
        return kwargs

    def tap(self, inner: StreamAccumulator, withhold: Callable[[Any], None] | None) -> StreamAccumulator:
        """A stream's accumulator: as it is, or under a layer that, after capture saw each chunk, blanks
        its thought text (redact mode) and gives it to ``withhold`` (the thoughts only loom-otel asked for)."""
        return inner if withhold is None and not self.adapter.redact else Scrubbing(self, inner, withhold)

    def scrub(self, response: Any) -> None:
        """``transcript="redact"``: the application gets no readable thought text (the chat history and
        the automatic-function-calling history hold these same objects)."""
        if not self.adapter.redact:
            return
        for hop in self.hops:
            hop.parts()  # read what was produced before its text is blanked
        _blank([c.content for c in getattr(response, "candidates", None) or () if c.content is not None])
        _blank(getattr(response, "automatic_function_calling_history", None) or ())

    def withhold(self, response: Any) -> bool:
        """Readable by request: the thought parts only loom-otel asked for are taken out of a response
        or chunk (and the automatic-function-calling history) once its parts were read for the bindings;
        whether a content was left with no part."""
        for hop in self.hops:
            hop.parts()
        emptied = withhold_thoughts([c.content for c in getattr(response, "candidates", None) or () if c.content])
        withhold_thoughts(getattr(response, "automatic_function_calling_history", None) or ())
        return emptied

    def record(self, call: ModelCall, capture: Capture | None, reasonings: Sequence[Reasoning]) -> None:
        """The bindings of every request's response (``capture`` of the call's ``reasonings``)."""
        for hop in self.hops:
            self.adapter.record(hop.plan, hop.parts(), capture, reasonings, call)


def _position(layout: list[list[tr.StepItem]], part: tr.Part) -> tuple[int, int]:
    for i, items in enumerate(layout):
        for j, step in enumerate(items):
            if step.kind == tr.SIGNATURE and step.parts[0] is part:
                return i, j
    raise LookupError("restored signature not in the request")


def _path(layout: list[list[tr.StepItem]], i: int, j: int) -> str:
    c, p = layout[i][j].parts[0].loc if layout[i][j].parts else (0, 0)
    return f"contents.{c}.parts.{p}"


def _split(text: str, sizes: tuple[int, ...], n: int) -> list[str]:
    if len(sizes) == n and sum(sizes) == len(text):
        out, at = [], 0
        for size in sizes:
            out.append(text[at : at + size])
            at += size
        return out
    return [text] + [""] * (n - 1)


def _edits(adapter: GeminiContinuation, layout: list[list[tr.StepItem]], plan: Plan) -> dict[tr.Loc, Any]:
    """What happens to each touched part: ``None`` (removed), ``("text", str)``, ``("sig", bytes | None)``."""
    edits: dict[tr.Loc, Any] = {}
    for (i, j), _ in plan.drops.items():
        step = layout[i][j]
        for part in step.parts:
            if step.kind == tr.THOUGHT or part.empty or part.thought:
                edits[part.loc] = None
            elif part.loc not in edits:
                edits[part.loc] = ("sig", None)
    for (i, j), text in plan.texts.items():
        step = layout[i][j]
        assert isinstance(step.item, Block)
        record = adapter.rule.bindings.block(step.item.key)
        pieces = _split(text, record.split if record is not None else (), len(step.parts))
        for part, piece in zip(step.parts, pieces, strict=True):
            if part.loc not in edits:
                edits[part.loc] = ("text", piece)
    for i, blocks in plan.restored.items():
        for j, _, _ in blocks:
            part = layout[i][j].parts[0]
            edits[part.loc] = ("sig", part.signature)
    return edits


def _edit(raw: Any, edit: tuple[str, Any]) -> Any:
    field = "text" if edit[0] == "text" else "thought_signature"
    if isinstance(raw, dict):
        out = {k: v for k, v in raw.items() if k not in ("thought_signature", "thoughtSignature")}
        if field == "text":
            out = {**raw, "text": edit[1]}
        elif edit[1] is not None:
            out["thought_signature"] = edit[1]
        return out
    return raw.model_copy(update={field: edit[1]})


def _rebuild(
    adapter: GeminiContinuation,
    contents: Any,
    layout: list[list[tr.StepItem]],
    plan: Plan,
    inserted: dict[int, list[tuple[int, list[tr.Part]]]],
    *,
    pieces: list[str],
) -> Any:
    """A new contents list with the plan applied and the thought runs put back (``inserted``, unless the
    plan drops them); contents the plan leaves alone are the same objects (the application's own
    history is never written to). Every thought text written into a part is added to ``pieces``."""
    edits = _edits(adapter, layout, plan)
    if not edits and not inserted:
        return contents
    original = list(contents) if isinstance(contents, list | tuple) else [contents]
    out = list(original)
    for c in sorted({c for c, _ in edits} | set(inserted)):
        content = original[c]
        sdk = not isinstance(content, dict)
        parts = list(content.parts or ()) if sdk else list(content.get("parts") or ())
        before = {at: run for at, run in inserted.get(c, ())}
        new = []
        for p, raw in enumerate([*parts, None]):
            for part in before.get(p, ()):
                edit = edits.get(part.loc, ("keep", None))
                if edit is not None:  # a run put back carries the text the rule put back, if any
                    text = edit[1] if edit[0] == "text" else part.text or ""
                    pieces.append(text)
                    new.append(_thought(text, sdk))
            if raw is None:
                break
            if (c, p) not in edits:
                new.append(raw)
            elif (edit := edits[(c, p)]) is not None:
                if edit[0] == "text":
                    pieces.append(edit[1])
                new.append(_edit(raw, edit))
        out[c] = content.model_copy(update={"parts": new}) if sdk else {**content, "parts": new}
    return out


def _model_steps(
    contents: list[tuple[str, list[tr.Part]]],
) -> list[tuple[tuple[int, int], list[tuple[int, int, tr.Part]]]]:
    """Each run of consecutive model contents (one step: a stream keeps one content per chunk): where it
    starts (content index, 0), and its parts as (content index, part index, part)."""
    steps: list[tuple[tuple[int, int], list[tuple[int, int, tr.Part]]]] = []
    previous = ""
    for c, (role, parts) in enumerate(contents):
        if role == "model":
            if previous != "model":
                steps.append(((c, 0), []))
            steps[-1][1].extend((c, p, part) for p, part in enumerate(parts))
        previous = role
    return steps


def _thought(text: str, sdk: bool) -> Any:
    """A thought part as the application's contents hold parts (SDK objects or dicts)."""
    if not sdk:
        return {"text": text, "thought": True}
    from google.genai import types

    return types.Part(text=text, thought=True)
