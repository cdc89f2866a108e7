"""``memstrata eval``: retrieval, extraction, intent, reply-check, scenario and
redaction quality against labeled data and baselines."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from memstrata.cli.common import (
    BaselineOption,
    JsonFlag,
    emit_json,
    err,
    load_baseline,
    out,
    typed_errors,
    warn_to_stderr,
)

app = typer.Typer(help="Retrieval quality on LoCoMo and LongMemEval, against baselines.")

KsOption = Annotated[
    list[str] | None,
    typer.Option("--k", help="Cut-offs, repeatable or comma-separated (default 5,10)."),
]
LimitOption = Annotated[int | None, typer.Option("--limit", min=1, help="Quick run on a prefix.")]
EvalDataDir = Annotated[
    Path | None,
    typer.Option("--data-dir", help="Keep the index under DIR/eval-<dataset> (default: temp)."),
]


def _parse_ks(values: list[str] | None) -> list[int]:
    try:
        ks = [int(p) for v in values or ["5,10"] for p in v.split(",") if p.strip()]
    except ValueError as exc:
        raise typer.BadParameter("must be integers", param_hint="--k") from exc
    if not ks:
        raise typer.BadParameter("needs at least one cut-off", param_hint="--k")
    return ks


def _eval_tables(report: dict[str, Any]) -> None:
    """Per system and group, the metric means; then latency and CER."""
    for name, result in report["results"].items():
        groups = {"overall": result["overall"]}
        groups.update(result.get("by_category", {}))
        groups.update(result.get("by_type", {}))
        if "adversarial" in result:
            groups["5 (adversarial)"] = result["adversarial"]
        metrics = [m for m in result["overall"] if m != "n"]
        table = Table(title=f"{report['dataset']}: {name}")
        for column in ("group", "n", *metrics):
            table.add_column(column, justify="left" if column == "group" else "right")
        for group, values in groups.items():
            cells = (f"{values[m]:.3f}" if m in values else "-" for m in metrics)
            table.add_row(group, str(values["n"]), *cells)
        out.print(table)
    latency = report["latency_ms"]
    out.print(
        f"[bold]latency[/bold] ({latency['system']}, incl. query embedding): "
        f"p50 {latency['p50']} ms, p99 {latency['p99']} ms"
    )
    out.print("[bold]CER[/bold]:", json.dumps(report["cer"]))
    calibration = report.get("calibration")
    if calibration:
        out.print(
            f"[bold]calibrated thresholds[/bold]: low_confidence_cosine "
            f"{calibration['low_confidence_cosine']}, skip_below_cosine "
            f"{calibration['skip_below_cosine']} ({calibration['rule']})"
        )
        curve = Table(title="threshold curve (memstrata's retrieved items)")
        columns = ("threshold", "evidence_kept", "precision", "questions_skipped")
        for column in (*columns, "answerable_skipped"):
            curve.add_column(column, justify="right")
        for row in calibration["curve"]:
            curve.add_row(*(f"{row[c]:.2f}" for c in (*columns, "answerable_skipped")))
        out.print(curve)
    out.print("[bold]data[/bold]:", json.dumps(report["data"], ensure_ascii=False))


@app.command("locomo")
def eval_locomo(
    data: Annotated[Path, typer.Option("--data", help="LoCoMo JSON file.")] = Path(
        "../shared/data/locomo/locomo10.json"
    ),
    limit: LimitOption = None,
    conversations: Annotated[
        str | None,
        typer.Option(
            "--conversations",
            help=(
                "Only these conversations of the file, 1-based: numbers and ranges, "
                "comma-separated (1-5, 6-10, 1,3,7-9). Choose a parameter on one half "
                "and report it on the other. Not with --limit."
            ),
        ),
    ] = None,
    k: KsOption = None,
    data_dir: EvalDataDir = None,
    as_json: JsonFlag = False,
    baseline_file: BaselineOption = None,
    fail_on_regression: Annotated[
        bool,
        typer.Option(
            "--fail-on-regression",
            help="Exit 1 when the memstrata row's hit_any@10 or hit_all@10 is below the "
            "previous release's (a run like the baseline's: the whole file). Latency is "
            "flagged, never failed.",
        ),
    ] = False,
) -> None:
    """Turn-level evidence retrieval per category; --limit N: the first N conversations,
    --conversations 6-10: those conversations of the file. Latency and hit rates are
    printed beside the previous release's."""
    from memstrata.bench.baseline import print_comparison, with_baseline
    from memstrata.eval.command import RichProgress, run_locomo
    from memstrata.eval.locomo import parse_conversations

    ks = _parse_ks(k)
    warn_to_stderr()
    with typed_errors(as_json), RichProgress(err) as progress:
        positions = None if conversations is None else parse_conversations(conversations)
        baseline = load_baseline(baseline_file, as_json)
        report = run_locomo(
            data,
            limit=limit,
            conversations=positions,
            ks=ks,
            data_dir=data_dir,
            progress=progress,
        )
    document, comparison = with_baseline(
        report, baseline, "eval locomo", "all", load=os.getloadavg()
    )
    if as_json:
        emit_json(document)
        print_comparison(comparison, err, table=False)
    else:
        _eval_tables(report)
        print_comparison(comparison, out)
    if fail_on_regression and not comparison.comparable:
        err.print(
            "--fail-on-regression: nothing compared ("
            + escape(comparison.mismatch or "no baseline for this mode")
            + ")",
            highlight=False,
        )
    if fail_on_regression and comparison.regressed("hit_rate"):
        err.print("[red]hit rates below the previous release[/red] (--fail-on-regression)")
        raise typer.Exit(1)


@app.command("longmemeval")
def eval_longmemeval(
    data: Annotated[Path, typer.Option("--data", help="LongMemEval JSON file.")],
    granularity: Annotated[
        str, typer.Option("--granularity", help="Score sessions or turns: session | turn.")
    ] = "session",
    limit: LimitOption = None,
    k: KsOption = None,
    data_dir: EvalDataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """recall_all@k and nDCG@k per question type; --limit N: the first N questions."""
    from memstrata.eval.command import RichProgress, run_longmemeval

    ks = _parse_ks(k)
    warn_to_stderr()
    with typed_errors(as_json), RichProgress(err) as progress:
        report = run_longmemeval(
            data,
            granularity=granularity,
            limit=limit,
            ks=ks,
            data_dir=data_dir,
            progress=progress,
        )
    if as_json:
        emit_json(report)
    else:
        _eval_tables(report)


@app.command("extraction")
def eval_extraction(
    data: Annotated[
        Path | None,
        typer.Option("--data", help="Labeled statements (JSONL); default: the packaged set."),
    ] = None,
    split: Annotated[
        str,
        typer.Option(
            "--split",
            help="Rows to score: dev | dev2 | test | heldback | blind | all. Only dev and dev2 "
            "are tuned on; "
            "test, heldback and blind (written before the rules were changed for them; blind by "
            "someone who had read neither the rules nor the set) never are, and each split is "
            "reported apart. blind's update sequences also run through engine.observe.",
        ),
    ] = "all",
    llm_base_url: Annotated[
        str | None,
        typer.Option(
            "--llm-base-url",
            help="Also score the LLM extractor at this OpenAI-compatible endpoint "
            "(API key from MEMSTRATA_LLM_API_KEY).",
        ),
    ] = None,
    llm_model: Annotated[
        str | None, typer.Option("--llm-model", help="Model name for --llm-base-url.")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Fact extraction precision / recall per split and attribute, and supersede accuracy."""
    from memstrata.eval.extraction import render_report, run_extraction_eval

    warn_to_stderr()
    with typed_errors(as_json):
        report = run_extraction_eval(
            data,
            split=split,
            llm_base_url=llm_base_url,
            llm_model=llm_model,
            llm_api_key=os.environ.get("MEMSTRATA_LLM_API_KEY") or None,
        )
    if as_json:
        emit_json(report)
    else:
        render_report(report, out)


@app.command("bilingual")
def eval_bilingual(
    split: Annotated[
        str,
        typer.Option(
            "--split",
            help="Conversations to run: dev | test | all. The test split is held back: "
            "never tune anything on it (thresholds, weights, rules); tune on dev.",
        ),
    ] = "test",
    limit: Annotated[
        int | None,
        typer.Option("--limit", min=1, help="Quick run on the split's first N conversations."),
    ] = None,
    calibrate: Annotated[
        bool,
        typer.Option(
            "--calibrate",
            help="Dev only (refuses test): top-1 cosine distributions of answerable vs "
            "unanswerable questions per dense model and query language, and the "
            "low-confidence threshold they give.",
        ),
    ] = False,
    data: Annotated[
        Path | None,
        typer.Option("--data", help="A data file in the packaged format (default: packaged)."),
    ] = None,
    data_dir: EvalDataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """Chinese and mixed Chinese/English chats: hit_any@10 / hit_all@10 per category,
    question language and across languages; unanswerable questions flagged."""
    from memstrata.eval.bilingual_report import render_bilingual
    from memstrata.eval.command import RichProgress, run_bilingual

    warn_to_stderr()
    with typed_errors(as_json), RichProgress(err) as progress:
        report = run_bilingual(
            data,
            split=split,
            limit=limit,
            calibrate=calibrate,
            data_dir=data_dir,
            progress=progress,
        )
    if as_json:
        emit_json(report)
    else:
        render_bilingual(report, out)


@app.command("intents")
def eval_intents(
    split: Annotated[str, typer.Option("--split", help="Rows: dev | test | all.")] = "test",
    data: Annotated[
        Path | None,
        typer.Option("--data", help="Labeled messages (JSONL); default: the packaged set."),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Intent recognition of messages sent without a step intent (Chinese, English,
    mixed): accuracy overall, per language and per intent, and the fall-back rate."""
    from memstrata.config import settings_from_env
    from memstrata.eval.intents import render_report, run_intents_eval
    from memstrata.wiring import build_understanding

    with typed_errors(as_json):
        report = run_intents_eval(build_understanding(settings_from_env()), split=split, data=data)
    if as_json:
        emit_json(report)
    else:
        render_report(report, sys.stdout)


@app.command("replycheck")
def eval_replycheck(
    split: Annotated[
        str,
        typer.Option(
            "--split",
            help="Pairs: dev | dev2 | test | blind | all. The test half was written before the "
            "rules were tuned and is never tuned on; dev2 and blind were written by people who "
            "had read neither the rules nor the set (blind is never tuned on).",
        ),
    ] = "test",
    data: Annotated[
        Path | None,
        typer.Option("--data", help="Labeled (reply, memories) pairs (JSONL); default: packaged."),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """The reply check against labeled (reply, memories) pairs in English and Chinese:
    precision, recall and F1 of conflicts (amounts, dates, ids, negated and contradicted
    facts) per split, language and kind."""
    from memstrata.eval.replycheck import render_report, run_replycheck_eval

    with typed_errors(as_json):
        report = run_replycheck_eval(split=split, data=data)
    if as_json:
        emit_json(report)
    else:
        render_report(report, sys.stdout)


@app.command("scenarios")
def eval_scenarios(
    split: Annotated[
        str,
        typer.Option(
            "--split",
            help="dev | blind: conversations written by someone who read neither the rules "
            "nor the other sets; only dev is tuned on.",
        ),
    ] = "blind",
    data: Annotated[
        Path | None,
        typer.Option("--data", help="Scenarios (JSONL) of the same shape; default: packaged."),
    ] = None,
    limit: Annotated[
        int | None, typer.Option("--limit", help="Only the first N scenarios.", min=1)
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Conversations over days, then one question, through observe, build_context and
    decide: the answer presented as confident and current, a stale value never, an
    unrelated question bringing nothing (pass rate per category and language)."""
    from memstrata.eval.scenarios import render_report, run_scenarios_eval

    with typed_errors(as_json):
        report = run_scenarios_eval(split=split, data=data, limit=limit)
    if as_json:
        emit_json(report)
    else:
        render_report(report, sys.stdout)


@app.command("redaction")
def eval_redaction(
    split: Annotated[
        str,
        typer.Option(
            "--split",
            help="Corpus split: dev | test | blind2. The test and blind2 splits are held back "
            "and never tuned on.",
        ),
    ] = "dev",
    data: Annotated[
        Path | None,
        typer.Option("--data", help="A labeled corpus file (JSONL); default: the packaged split."),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """The gateway against a labeled corpus of secrets and benign look-alikes in English
    and Chinese: recall per kind, language and encoding, the false-redaction rate per
    look-alike, and the ids of the misses."""
    from memstrata.eval.redaction import render_report, run_redaction_eval

    with typed_errors(as_json):
        report = run_redaction_eval(split=split, data=data)
    if as_json:
        emit_json(report)
    else:
        render_report(report, sys.stdout)
