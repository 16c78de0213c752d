"""The results as JSON (everything measured) and as a markdown table (what a reader needs)."""

from __future__ import annotations

from typing import Any

from benchmarks.compare import scale, session_costs, speed_report


def _labels(results: dict[str, Any]) -> dict[str, str]:
    labels: dict[str, str] = results["labels"]
    return labels


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "–"


def validity_table(results: dict[str, Any]) -> list[str]:
    validity = results["validity"]
    lines = [
        "| system | outputs | compacted | raised | valid (OpenAI) | valid (Anthropic) "
        "| HTTP 400 (OpenAI) | HTTP 400 (Anthropic) | tessera pairing |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, t in validity["systems"].items():
        whole = t["outputs"] + t["raised"]
        lines.append(
            f"| {_labels(results)[name]} | {t['outputs']} | {t['compacted']} | {t['raised']} "
            f"| {_pct(t['valid']['openai'], whole)} | {_pct(t['valid']['anthropic'], whole)} "
            f"| {t['http_400']['openai']} | {t['http_400']['anthropic']} "
            f"| {_pct(t['tessera_pass'], t['tessera_checked'])} |"
        )
    return lines


def retention_table(results: dict[str, Any]) -> list[str]:
    from benchmarks.compare.anchors import KINDS  # noqa: PLC0415 - keeps this module light

    lines = [
        "| system | ratio | all anchors | salient | "
        + " | ".join(KINDS)
        + " | compression reached (median) | over the window | raised |",
        "|---|---:|---:|---:|" + "---:|" * len(KINDS) + "---:|---:|---:|",
    ]
    for ratio, block in results["retention"]["ratios"].items():
        for r in block["systems"].values():
            shares = [
                "–" if r["share"][k] is None else f"{100 * r['share'][k]:.0f}%" for k in KINDS
            ]
            reached = r["compression"]
            median = reached[len(reached) // 2] if reached else None
            lines.append(
                f"| {r['label']} | {ratio}× | {100 * r['overall']:.1f}% "
                f"| {100 * r['salient']:.1f}% | "
                + " | ".join(shares)
                + f" | {'–' if median is None else f'{median:.1f}×'} "
                f"| {len(r.get('over', ()))} | {len(r['raised'])} |"
            )
    return lines


def retention_verdicts(results: dict[str, Any]) -> list[str]:
    """The issue's goal for each ratio: salient anchors at least twice the best peer's, and
    every request a person wrote."""
    lines = []
    for ratio, block in results["retention"]["ratios"].items():
        systems = block["systems"]
        ours = systems.get("synopsis")
        peers = {k: v for k, v in systems.items() if k != "synopsis"}
        if ours is None or not peers:
            continue
        best = max(peers.values(), key=lambda r: r["salient"])
        met = ours["salient"] >= 2 * best["salient"]
        lines.append(
            f"- {ratio}×: synopsis keeps {100 * ours['salient']:.1f}% of the salient anchors; "
            f"the best peer, {best['label']}, {100 * best['salient']:.1f}% "
            f"(target ≥ 2×): **{'met' if met else 'not met'}**"
        )
        requests = ours["share"].get("request")
        if requests is not None:
            lines.append(
                f"- {ratio}×: synopsis keeps {100 * requests:.0f}% of the person's requests "
                f"(target 100%): **{'met' if requests >= 1 else 'not met'}**"
            )
    return lines


def replay_table(results: dict[str, Any]) -> list[str]:
    replay = results["replay"]
    ours = replay["systems"].get("synopsis", {}).get("mean_ms")
    lines = [
        "| system | per request (mean) | vs synopsis | compactions | tokens sent "
        "| largest request | invalid requests |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, r in replay["systems"].items():
        if "error" in r:
            lines.append(f"| {_labels(results)[name]} | error: {r['error'][:80]} |||||")
            continue
        ratio = "1.0×" if name == "synopsis" or not ours else f"{r['mean_ms'] / ours:,.1f}×"
        lines.append(
            f"| {_labels(results)[name]} | {r['mean_ms']:,.2f} ms | {ratio} | "
            f"{r['compactions']} | {r['tokens_sent']:,} | {r['largest_request']:,} | "
            f"{r['invalid_requests']} |"
        )
    return lines


def _share(counts: list[int]) -> str:
    kept, found = counts
    return f"{100 * kept / found:.1f}%" if found else "–"


def _variants(block: dict[str, Any], *, targets: bool) -> list[tuple[str, dict[str, Any]]]:
    """The rows of one window: synopsis's default first (every target too with ``targets``),
    then each of its strategies, then the peers."""
    rows = sorted(
        block["variants"].items(),
        key=lambda kv: (
            kv[1]["system"] != "synopsis",
            bool(kv[1].get("strategy")),
            kv[1].get("target") or 0,
        ),
    )
    return [
        (key, v)
        for key, v in rows
        if v["system"] != "synopsis" or v.get("default") or v.get("strategy") or targets
    ]


def _label(v: dict[str, Any]) -> str:
    """A variant's row label; synopsis's default says its target."""
    label: str = v["label"]
    return label + (f" (default target {v['target']:g})" if v.get("default") else "")


def replay_retention_table(results: dict[str, Any], window: str) -> list[str]:
    """Per system at one window: what each compaction's removed part kept, pooled."""
    block = results["replay_retention"]["by_window"][window]
    sessions = len(block["sessions"])
    lines = [
        "| system | compactions per session | tokens sent | over the window | paths | requests "
        "| first request | constraints | raised |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for _, v in _variants(block, targets=False):
        t = v["totals"]
        ran = sessions - len(v["raised"])
        per = f"{t['compactions'] / ran:.1f}" if ran else "–"
        label = _label(v)
        lines.append(
            f"| {label} | {per} | {t['tokens_sent']:,} | {t.get('over_window', 0)} "
            f"| {_share(t['paths'])} "
            f"| {_share(t['requests'])} | {_share(t['first'])} | {_share(t['constraints'])} "
            f"| {len(v['raised'])} |"
        )
    return lines


def retention_costs_table(block: dict[str, Any]) -> list[str]:
    """:func:`benchmarks.compare.session_costs.table` for one window of the retention replay."""
    rows = [(_label(v), v["totals"]) for _, v in _variants(block, targets=False)]
    return session_costs.table(rows, block.get("uncompacted", {}))


def _valid(totals: dict[str, Any]) -> str:
    """The share of compactions whose output both providers accept."""
    invalid = totals.get("invalid")
    if invalid is None:
        return "–"
    done = totals["compactions"]
    return _pct(done - max(invalid.values(), default=0), done) if done else "–"


def strategies_table(block: dict[str, Any]) -> list[str]:
    """What a default is chosen from, at one window: synopsis's default and each strategy,
    and every peer, with what each cost, what it kept, whether its outputs were valid, and
    which others kept more for less (:func:`benchmarks.compare.replay_retention.beaten`)."""
    from benchmarks.compare.replay_retention import beaten, configurations, retained  # noqa: PLC0415

    found = configurations(block)
    if not any(v.get("strategy") for v in found.values()):
        return []
    better = beaten(block)
    lines = [
        "| configuration | input cost, Anthropic | input cost, OpenAI | tokens sent "
        "| compactions | within two requests | summarizer calls | paths | requests "
        "| constraints | retained | valid | kept as much for less |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for key, v in _variants(block, targets=False):
        t = v["totals"]
        costs = [session_costs.usd(t["cost"][p]) if "cost" in t else "–" for p in _PRICED]
        value = retained(t)
        by = "; ".join(f"{other} ({', '.join(ms)})" for other, ms in better[key].items())
        lines.append(
            f"| {key}{' (default)' if v.get('default') else ''} | {costs[0]} | {costs[1]} "
            f"| {t['tokens_sent']:,} | {t['compactions']} | {t.get('bursts', '–')} "
            f"| {t.get('summarizer_calls', '–')} | {_share(t['paths'])} "
            f"| {_share(t['requests'])} | {_share(t['constraints'])} "
            f"| {'–' if value is None else f'{100 * value:.1f}%'} | {_valid(t)} | {by or 'none'} |"
        )
    return lines


_PRICED = ("anthropic", "openai")


def strategies_lines(results: dict[str, Any]) -> list[str]:
    """The section that compares synopsis's strategies with each other and with the peers,
    window by window; nothing for results without them."""
    from benchmarks.compare.replay_retention import beaten  # noqa: PLC0415

    r = results["replay_retention"]
    tables = {w: strategies_table(block) for w, block in r["by_window"].items()}
    if not any(tables.values()):
        return []
    default = r.get("default_strategy")
    out = [
        "## Clearing, summarizing, or both",
        "",
        "The same replays, synopsis at its default target with each `strategy` (what it does "
        "under pressure, in order: `clear` replaces old tool outputs by a placeholder that "
        "says how to recall them, `summarize` writes a summary) beside synopsis's default"
        + (f" (strategy `{default}`)" if default else "")
        + " and every peer. Cost: the input of every request with a provider's prefix cache, "
        "at list prices (see above). Retained: paths and request first lines of every removed "
        "part, pooled. Valid: the share of compactions whose output both OpenAI's and "
        "Anthropic's rules accept. Kept as much for less: the configurations that keep at "
        "least as much for no more cost, and more or for less, by tokens sent and by each "
        "provider's price.",
        "",
    ]
    for window, table in tables.items():
        if not table:
            continue
        better = beaten(r["by_window"][window])
        alone = [key for key, by in better.items() if not by]
        out += [
            f"### {int(window):,}-token window",
            "",
            *table,
            "",
            "Nothing keeps as much for less than: " + (", ".join(alone) or "none") + ".",
            "",
        ]
    return out


def tradeoff_table(results: dict[str, Any], window: str) -> list[str]:
    """synopsis at each target and each peer: retention against tokens sent and compactions."""
    from benchmarks.compare.replay_retention import retained  # noqa: PLC0415

    block = results["replay_retention"]["by_window"][window]
    lines = [
        "| system | target | retained (paths + requests) | salient anchors | tokens sent "
        "| compactions |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for _, v in _variants(block, targets=True):
        t = v["totals"]
        value = retained(t)
        target = "–" if v.get("target") is None else f"{v['target']:g}"
        if v.get("default"):
            target += " (default)"
        elif v.get("strategy"):
            target += f", strategy {v['strategy']}"
        lines.append(
            f"| {v['label']} | {target} | {'–' if value is None else f'{100 * value:.1f}%'} "
            f"| {_share(t['salient'])} | {t['tokens_sent']:,} | {t['compactions']} |"
        )
    return lines


def tradeoff_sentence(results: dict[str, Any], window: str) -> str:
    """Whether synopsis's default keeps more than every peer for no more tokens sent, and which
    targets would."""
    from benchmarks.compare.replay_retention import bettering, kept_share  # noqa: PLC0415

    block = results["replay_retention"]["by_window"][window]
    ours = next(v for v in block["variants"].values() if v.get("default"))
    mine, sent = kept_share(ours["totals"]), ours["totals"]["tokens_sent"]
    head = (
        f"At {int(window) // 1000}k the default target is {ours['target']:g}: synopsis keeps "
        f"{100 * mine:.1f}% for {sent:,} tokens sent"
    )
    better = bettering(block)
    if not better:
        return head + "; no peer was run."
    short = []
    for v in block["variants"].values():
        if v["system"] == "synopsis":
            continue
        why = []
        if kept_share(v["totals"]) >= mine:
            why.append(f"keeps {100 * kept_share(v['totals']):.1f}%")
        if v["totals"]["tokens_sent"] < sent:
            why.append(f"sends {v['totals']['tokens_sent']:,} tokens")
        if why:
            short.append(f"{v['label']} " + " and ".join(why))
    if short:
        head += "; not more than every peer for no more tokens sent: " + "; ".join(short)
    else:
        head += ", more than every peer for no more tokens sent (met)"
    targets = "; ".join(
        f"{label}: {', '.join(f'{t:g}' for t in ts) or 'none'}" for label, ts in better.items()
    )
    return head + f". Targets keeping more than each peer for no more tokens: {targets}."


def replay_retention_lines(results: dict[str, Any]) -> list[str]:
    from benchmarks.compare.replay_retention import verdicts  # noqa: PLC0415

    r = results["replay_retention"]
    out = [
        "## Retention over replayed sessions",
        "",
        f"Every transcript replayed message by message into each window; at each compaction, "
        "what its removed part (the messages not kept word for word) still has in the "
        "compacted history: file paths, the first lines of the person's requests, the "
        "session's first request, and every constraint stated so far (never / do not / must / "
        "always / only / instead). A request is a user message a person wrote: not a "
        "summary, a tool observation, hook feedback or instructions the harness injects "
        "(Codex's AGENTS.md). Shares pooled over every compaction of every session. "
        f"synopsis with its defaults (trigger {r['trigger_share']:.0%}, rule-based "
        f"summarizer); each peer on its non-LLM path with the same trigger, told to keep the "
        f"newest messages up to {r['peer_landing']:.0%} of the window with the system prompt "
        "(where synopsis's default lands). Over the window: requests larger than the window, "
        "which a provider refuses. " + session_costs.note(),
        "",
    ]
    for window, block in r["by_window"].items():
        left = "".join(f"; {name} left out: {why}" for name, why in block["left_out"].items())
        out += [
            f"### {int(window):,}-token window ({len(block['sessions'])} sessions{left})",
            "",
            *replay_retention_table(results, window),
            "",
        ]
        for line, met in verdicts(block, int(window)):
            mark = "not measured" if met is None else ("met" if met else "NOT met")
            out.append(f"- {line}: **{mark}**")
        ours = next(v for v in block["variants"].values() if v.get("default"))
        missed = {
            name: s["missed_constraints"]
            for name, s in ours["sessions"].items()
            if s.get("missed_constraints")
        }
        for name, texts in missed.items():
            out.append(
                f"- synopsis missed in {name}: " + "; ".join(f"`{t[:80]}`" for t in texts[:3])
            )
        out.append("")
        costs = retention_costs_table(block)
        if costs:
            out += ["What the sessions cost each system, pooled:", "", *costs, ""]
    out += [
        "## Retention against cost",
        "",
        "The same replays, synopsis at each `target_ratio` (the share of the window a "
        "compaction lands at) and each peer once: retained is the paths and request first "
        "lines of every removed part, pooled; salient anchors are all five anchor kinds in "
        "the removed user and assistant messages. Plot: `benchmarks/results/"
        "retention-tradeoff.png`.",
        "",
    ]
    for window in r["by_window"]:
        out += [
            f"### {int(window):,}-token window",
            "",
            *tradeoff_table(results, window),
            "",
            tradeoff_sentence(results, window),
            "",
        ]
    out += strategies_lines(results)
    return out


def markdown(results: dict[str, Any]) -> str:
    meta = results["meta"]
    out = [
        "# synopsis against its peers",
        "",
        f"Measured {meta['date']} on {meta['machine']} with Python {meta['python']}, "
        f"by `{meta['command']}` in {meta['seconds']:.0f} s. Every ratio is peer / synopsis, "
        "from the same run. Each peer is driven through its public hook with the same "
        "deterministic, instant fake summarizer, so only the machinery is compared.",
        "",
        "Versions: " + ", ".join(f"{k} {v}" for k, v in meta["versions"].items()) + ".",
        "",
    ]
    earlier: dict[str, list[str]] = {}
    for part, date in meta.get("measured", {}).items():
        if date != meta["date"]:
            earlier.setdefault(date, []).append(part.replace("_", "-"))
    if earlier:
        out += [
            "Kept from earlier runs: "
            + "; ".join(f"{', '.join(parts)} measured {date}" for date, parts in earlier.items())
            + ".",
            "",
        ]
    if "speed" in results:
        out += speed_report.lines(results)
    if "replay" in results:
        r = results["replay"]
        out += [
            f"## Per request over a replayed session ({r['session']}, {r['window']:,}-token "
            "window)",
            "",
            *replay_table(results),
            "",
        ]
        costs = session_costs.replay_table(results)
        out += [*costs, "", session_costs.note(), ""] if costs else []
    if "scale" in results:
        out += [*scale.lines(results), ""]
    if "validity" in results:
        v = results["validity"]
        every = v.get("all_cut_points")
        left = (
            f"; {every - v['cut_points']} more are left out because the recorded history is "
            "itself invalid there"
            if every and every > v["cut_points"]
            else ""
        )
        out += [
            f"## Validity over every cut point ({v['cut_points']} cut points of "
            f"{v['transcripts']} transcripts{left})",
            "",
            *validity_table(results),
            "",
        ]
        for name, t in v["systems"].items():
            notes = []
            if t["rules"]:
                notes.append(
                    "rules broken: "
                    + ", ".join(f"{rule} ×{n}" for rule, n in list(t["rules"].items())[:4])
                    + f"; e.g. {t['example']}"
                )
            if t["errors"]:
                notes.append(
                    "raised: " + ", ".join(f"{kind} ×{n}" for kind, n in t["errors"].items())
                )
            if notes:
                out.append(f"- {_labels(results)[name]}: " + ". ".join(notes))
        out.append("")
    if "retention" in results:
        out += [
            "## Anchors retained from the summarized segment",
            "",
            "Each transcript compacted once to a budget of its system prompt plus 1/ratio of "
            "the rest; anchors counted in the older segment only a summary can carry. Salient: "
            "in what a person or the model wrote (a harness's observation in a user turn is "
            "tool output). An output over the window is refused by the provider, so it "
            "retains nothing.",
            "",
            *retention_table(results),
            "",
            *retention_verdicts(results),
            "",
        ]
    if "replay_retention" in results:
        out += replay_retention_lines(results)
    if "yardsticks" in results:
        out += ["## External yardsticks", "", *results["yardsticks"].get("lines", []), ""]
    return "\n".join(out) + "\n"
