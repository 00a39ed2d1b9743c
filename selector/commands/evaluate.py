"""`selector evaluate`: several projects' stores, each on its own and each left out in turn; day one; the replay."""

from __future__ import annotations

from pathlib import Path

import click

from perf_selector.collectors.errors import UserError
from perf_selector.models.names import MODEL_NAMES
from perf_selector.selector.commands.common import FitsLog, comma_list, format_option, operating_point_option, store_and_config
from perf_selector.selector.extras import require
from perf_selector.selector.tables import caution_few_positives, logging_progress, print_json, print_table, records, stderr, stdout


def _store_and_config(context, parameter, values) -> list[tuple[Path, Path | None]]:
    return [store_and_config(value) for value in values]



@click.command("evaluate")
@click.argument("stores", nargs=-1, required=True, callback=_store_and_config, metavar="STORE[=CONFIG]...")
@click.option("--models", callback=comma_list(MODEL_NAMES), help="Comma-separated models [default: all].")
@click.option("-k", "k", type=click.IntRange(min=1), default=5, show_default=True, help="Method 4: test commits per epoch.")
@click.option("--first", type=click.IntRange(min=1), help="Method 4: training commits of the first epoch [default: a fifth, at least 5].")
@click.option("--target-hit-rate", type=click.FloatRange(0, 1, min_open=True), default=0.95, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--leave-one-out/--own-only", default=True, show_default=True,
              help="Also train each model on the other projects and test it on each held-out one.")
@click.option("--threshold-from", type=click.Choice(["projects", "folds"]), default="projects", show_default=True,
              help="Leave-one-project-out: place each cross-project model's operating point on its training projects' "
                   "scores, each project held out in turn, or on random folds of all their tuples.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=Path("evaluation"),
              show_default=True,
              help="Where results go: evaluation.json, per project a backtest folder with its report, and parts/ (each "
                   "finished project's part, from which a run cut off half way resumes).")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=1, show_default=True,
              help="Projects evaluated side by side, each in a process of its own (the figures do not depend on it); "
                   "with --held-out, the projects each held-out bundle judges its learner on.")
@click.option("--fresh", is_flag=True,
              help="Compute every project's part again, not taking those an earlier run with the same inputs and code "
                   "kept under OUT/parts (a run cut off half way resumes from them).")
@click.option("--report/--no-report", default=True, show_default=True, help="Write each project's report.html.")
@click.option("--markdown", "markdown_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the tables into this Markdown file (between its 'selector evaluate' markers, keeping the prose).")
@click.option("--write-model", "model_path", type=click.Path(file_okay=False, path_type=Path),
              help="Also train the shipped-style cross-project model on every project given and write its bundle here.")
@click.option("--model", "shipped_model", type=click.Choice(("auto", *MODEL_NAMES)), default="auto", show_default=True,
              help="The model --write-model trains. auto: the learner the projects held out in turn choose (each "
                   "trained on the others and deciding the one held out with select's own code, under the conformal "
                   "bound) among train's learners but the SVM (too slow held out in turn): the one that prunes the "
                   "most, recorded in the bundle with why; -j judges them side by side.")
@click.option("--shipped", "day_one", is_flag=True,
              help="Day one instead: the shipped cross-project model (or --bundle), untrained on the projects, decides "
                   "every labelled pair of each store with select's own decision code, beside the rules that need no "
                   "learning (executed-changed, reached-changed). Any store, a project outside the corpus included.")
@click.option("--replay", is_flag=True,
              help="Replay instead: walk each store's history as a team using select from its first commit, skipped "
                   "runs really skipped (the next comparison is against the last run), per policy (always, "
                   "executed-changed, the shipped model, the project's own): share of runs and benchmark time, and "
                   "each change caught at its commit, later (how many commits) or never (docs/evaluation.md).")
@click.option("--retrain-every", type=click.IntRange(min=0), default=25, show_default=True,
              help="With --replay: the project's own policy retrains its model (train's choice of learner and policy) "
                   "every N commits of the walk on the history before them, as a team would; 0: the bundle in "
                   "<store>/models instead, trained on the very history it walks (in sample, optimistic).")
@click.option("--join", "joined_path", type=click.Path(dir_okay=False, path_type=Path),
              help="With --replay: join this run's projects into this replay document (kept from earlier runs: a "
                   "project walked again replaces its rows, the others keep theirs), write it back, and the Markdown "
                   "from it: a corpus walked a few stores at a time, on machines that each hold only those, reads as "
                   "one replay. Created when missing.")
@click.option("--bundle", "bundle_path", type=click.Path(file_okay=False, exists=True, path_type=Path),
              help="With --shipped or --replay: this model bundle instead of the shipped one.")
@click.option("--held-out", is_flag=True,
              help="With --shipped or --replay: decide each project with a bundle trained as the shipped one (its model "
                   "and settings) on the other stores given only: honest day-one figures for the projects the shipped "
                   "model learnt from.  With --replay, an evaluation pack given trains the bundles of the stores "
                   "walked and is not walked itself (a pack holds no history to replay).")
@click.option("--fits", "fits_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Where the fits of the projects held out in turn are kept [default: OUT/fits]: the steps of a corpus "
                   "evaluation given the same folder (leave-one-project-out, --write-model, --shipped --held-out, "
                   "--replay --held-out) take what the others fitted on the same projects, and a run cut off resumes.")
@operating_point_option
@format_option
def evaluate_command(stores, models, k, first, target_hit_rate, seed, leave_one_out, threshold_from, out_dir, jobs, fresh, report,
                     markdown_path, model_path, shipped_model, day_one, replay, retrain_every, joined_path, bundle_path,
                     held_out, fits_dir, operating_point, output_format):
    """Method 4 on one or several projects' stores, and leave-one-project-out across them.

    Each STORE is a project's store, with its selector.toml beside it (as .selector/ and
    selector.toml sit in a repository) or named as STORE=CONFIG. Each project's own
    figures are those `selector backtest` gives; leave-one-project-out trains every model
    on the other projects alone (the benchmark not an input) and tests it on the held-out
    project's Method 4 test tuples. Prints, per project and pooled: tuples, positives,
    AUROC, realized hit and dismiss rates, time saved.
    """
    require("selector evaluate", "train")
    from perf_selector.selector.evaluation.evaluation_parts import Parts

    fits_kept = Parts(fits_dir or out_dir / "fits", reuse=not fresh)
    method4 = {"k": k, "first": first, "epoch_days": None}  # the tuples the shipped bundle is trained on
    if day_one:
        _evaluate_day_one(stores, bundle_path, held_out, out_dir, markdown_path, output_format, fits_kept, method4, jobs)
        return
    if replay:
        _evaluate_replay(stores, bundle_path, held_out, out_dir, markdown_path, output_format, retrain_every or None,
                         fits_kept, method4, jobs, joined_path)
        return
    if joined_path:
        raise click.UsageError("--join goes with --replay")
    if bundle_path or held_out:
        raise click.UsageError("--bundle and --held-out go with --shipped or --replay")
    if report:
        require("selector evaluate's reports", "report", otherwise="pass --no-report")
    from perf_selector.models.backtest import count_fits
    from perf_selector.selector.evaluation.project_evaluation import (
        SCOPES,
        evaluate,
        load_projects,
        save_evaluation,
        write_markdown,
    )

    models = models or list(MODEL_NAMES)
    options = {"k": k, "first": first, "epoch_days": None}
    with stderr.status("building tuples and features") as status:
        def loading(name: str) -> None:
            status.update(f"building tuples and features: {name}")
            if logging_progress():  # the status line shows only on a terminal; a log gets a line per project
                stderr.print(f"building tuples and features: {name}")

        projects = load_projects(stores, options, on_project=loading)
    from rich.progress import Progress

    own = sum(count_fits(p.data.plan, p.data.table, models, SCOPES) for p in projects)
    crossed = len(projects) * len(models) if leave_one_out and len(projects) > 1 else 0
    log = FitsLog() if logging_progress() else None
    if log:
        log.start(own + crossed)
    parts = Parts(out_dir / "parts", reuse=not fresh)
    with Progress(console=stderr.console, transient=True) as progress:
        task = progress.add_task("fitting models", total=own + crossed)

        def fitted(n: int) -> None:
            progress.advance(task, n)
            if log:
                log.advance(n)

        evaluation = evaluate(projects, models, target_hit_rate, seed, leave_one_out, progress=fitted,
                              threshold_by_project=threshold_from == "projects", operating_point=operating_point, jobs=jobs,
                              parts=parts, fits_kept=fits_kept)
    if parts.taken:
        stderr.print(f"{parts.taken} of the evaluation's parts taken from an earlier run with the same inputs and code "
                     f"({parts.directory}; --fresh computes them again)")
    document = save_evaluation(out_dir, evaluation)
    if report:
        from perf_selector.selector.evaluation.report import write_report

        with stderr.status("drawing the reports"):
            for project in projects:
                write_report(out_dir / project.name)
    if markdown_path:
        write_markdown(markdown_path, document)
    if model_path:
        from perf_selector.selector.evaluation.project_evaluation import train_cross_project_bundle

        with stderr.status(f"training the cross-project {shipped_model} on {len(projects)} projects") as status:
            def judged(name: str) -> None:
                status.update(f"choosing the cross-project model: {name} held out on each of {len(projects)} projects")
                if logging_progress():
                    stderr.print(f"choosing the cross-project model: {name} judged")

            shipped = train_cross_project_bundle(projects, model_path, shipped_model, target_hit_rate, seed, operating_point,
                                                 threshold_from == "projects", on_candidate=judged, jobs=jobs,
                                                 fits_kept=fits_kept)
        if shipped.settings.get("chosen"):
            stderr.print(f"cross-project model: {shipped.settings['chosen']['reason']}")
        document["model"] = {"bundle": str(model_path), **shipped.trained_on}
    if output_format == "json":
        print_json({"directory": str(out_dir), **document})
        return
    import pandas as pd

    shown = pd.DataFrame(document["results"]).drop(columns=["missed"]).round(3)  # save_evaluation's table
    for scope, part in shown.groupby("scope", sort=False):
        print_table(part.drop(columns=["scope"]), title=f"{scope}: per project, at the operating point for hit rate {target_hit_rate:g}")
    caution_few_positives(document["results"], lambda row: str(row["project"]))
    for note in document["notes"]:
        stderr.print(f"note: {note}")
    stdout.print(f"results in {out_dir}" + (f"; tables written into {markdown_path}" if markdown_path else "")
                 + (f"; cross-project model in {model_path}" if model_path else ""))



def _evaluate_day_one(stores, bundle_path: Path | None, held_out: bool, out_dir: Path, markdown_path: Path | None,
                      output_format: str, fits_kept=None, method4: dict | None = None, jobs: int = 1) -> None:
    """`evaluate --shipped`: the bundle's day-one decisions on every labelled pair of each store."""
    import json

    import pandas as pd

    from perf_selector.selector.evaluation.day_one import (
        day_one_document,
        day_one_predictions,
        day_one_table,
        held_out_bundle,
        held_out_fits_like,
        write_markdown,
    )

    if held_out and len(stores) < 2:
        raise UserError("--held-out trains on the other stores given: give at least two")
    bundle = _shipped_or_given(bundle_path)
    projects, frames, deciding = _labelled_projects(stores), [], {}
    training = _training_projects(stores, method4) if held_out else []
    fits = held_out_fits_like(training, bundle, fits_kept) if held_out else None
    with stderr.status("deciding") as status:
        for number, (project, trained) in enumerate(zip(projects, training or projects), 1):
            deciding[project.name] = bundle
            if held_out:
                _training_without(status, project.name, number, len(projects))
                deciding[project.name] = held_out_bundle(training, trained, bundle, out_dir / "held-out" / project.name,
                                                         fits, jobs)
            frames.append(day_one_predictions(project, deciding[project.name]))
    predictions = pd.concat(frames, ignore_index=True)
    document = day_one_document(predictions, bundle, projects, held_out, deciding)
    out_dir.mkdir(parents=True, exist_ok=True)
    predictions.to_parquet(out_dir / "day-one.parquet", index=False)
    (out_dir / "day-one.json").write_text(json.dumps(document, indent=2))
    if markdown_path:
        write_markdown(markdown_path, document)
    if output_format == "json":
        print_json({"directory": str(out_dir), **document})
        return
    table = day_one_table(predictions)
    print_table(table.round(3), title="day one: every labelled pair, no training on the project")
    caution_few_positives(records(table), lambda row: str(row["project"]))
    print_table(pd.DataFrame(document["policies"]),
                title="the policy each deciding bundle earned (executed-changed: it stepped aside, the rule decided)")
    missed = pd.DataFrame(document["missed"])
    if len(missed):
        print_table(missed.assign(new=missed["new"].str[:10], old=missed["old"].str[:10]).round(4),
                    title="changes the shipped model would have skipped")
    stdout.print(f"results in {out_dir}" + (f"; tables written into {markdown_path}" if markdown_path else ""))


def _training_without(status, name: str, number: int, count: int) -> None:
    """Where training the held-out bundles is (hours on a corpus): on the status line, and in a log a line each."""
    status.update(f"training without {name} ({number} of {count})")
    if logging_progress():
        stderr.print(f"training without {name} ({number} of {count})")


def _evaluate_replay(stores, bundle_path: Path | None, held_out: bool, out_dir: Path, markdown_path: Path | None,
                     output_format: str, retrain_every: int | None = None, fits_kept=None,
                     method4: dict | None = None, jobs: int = 1, joined_path: Path | None = None) -> None:
    """`evaluate --replay`: each store's history walked as a team using select from day one."""
    import json

    from perf_selector.selector.evaluation.day_one import held_out_bundle, held_out_fits_like
    from perf_selector.selector.evaluation.evaluation_pack import Pack, is_pack
    from perf_selector.selector.evaluation.replay import (
        check_joinable,
        joined,
        replay_document,
        summary_and_pooled,
        unseen_frame,
        write_markdown,
    )

    earlier = _replay_document(joined_path) if joined_path and joined_path.exists() else None
    if earlier:
        check_joinable(earlier, held_out, f"{joined_path} and this replay")  # said before the walk, which takes hours
    bundle_for = None
    replayed = stores
    if held_out:
        if len(stores) < 2:
            raise UserError("--held-out trains on the other stores given: give at least two")
        # A pack holds no comparison with an older ancestor than Method 4's, so no history to walk;
        # it trains the bundles of the stores walked beside it as the shipped bundle's is trained.
        replayed = [(store, config) for store, config in stores if not is_pack(store)]
        if not replayed:
            raise UserError("the replay walks stores: every one given is an evaluation pack (they only train the "
                            "held-out bundles); give the store of at least one project to walk")
        bundle = _shipped_or_given(bundle_path)
        training = _training_projects(stores, method4)
        bundle_for = {}
        fits = held_out_fits_like(training, bundle, fits_kept)
        walked = [project for project in training if not isinstance(project.store, Pack)]
        packed = [project.name for project in training if isinstance(project.store, Pack)]
        if packed:
            stderr.print(f"from their evaluation packs, training only (not walked): {', '.join(packed)}")
        with stderr.status("training") as status:
            for number, project in enumerate(walked, 1):
                _training_without(status, project.name, number, len(walked))
                directory = out_dir / "held-out" / project.name
                held_out_bundle(training, project, bundle, directory, fits, jobs)
                bundle_for[project.name] = directory
    with stderr.status("replaying the history") as status:
        document = replay_document(replayed, bundle_path, bundle_for, retrain_every, out_dir,
                                   _replay_progress(status))
    out_dir.mkdir(parents=True, exist_ok=True)  # every --out holds what the command printed
    (out_dir / "replay.json").write_text(json.dumps(document, indent=2, default=str))
    if joined_path:
        # read again: another walk may have joined its projects into it while this one walked
        earlier = _replay_document(joined_path) if joined_path.exists() else None
        document = joined(earlier, document) if earlier else document
        joined_path.parent.mkdir(parents=True, exist_ok=True)
        staged = joined_path.with_name(joined_path.name + ".partial")  # a write cut off leaves the kept one whole
        staged.write_text(json.dumps(document, indent=1, default=str) + "\n")
        staged.replace(joined_path)
    if markdown_path:
        write_markdown(markdown_path, document)
    if output_format == "json":
        print_json(document)
        return
    print_table(summary_and_pooled(document).round(3), title="replay: select from day one, skipped runs really skipped")
    unseen = unseen_frame(document)
    if len(unseen):
        print_table(unseen, title="changes not caught at their commit")
    stdout.print(f"results in {out_dir / 'replay.json'}" + (f"; joined into {joined_path}" if joined_path else "")
                 + (f"; tables written into {markdown_path}" if markdown_path else ""))


def _replay_progress(status):
    """The replay's progress (an interpreter's history takes half an hour): on the status line, or
    in a log a line at most every 30 s per project and policy, with the time left at that walk's
    pace (the own policy, which retrains as it walks, is many times slower than the others)."""
    from perf_selector.selector.tables import LogProgress

    logs: dict[tuple[str, str], LogProgress] = {}

    def progress(project: str, policy: str, done: int, commits: int) -> None:
        if logging_progress():
            logs.setdefault((project, policy), LogProgress(f"replayed {project} under {policy} (commits)", commits)).advance()
        else:
            status.update(f"replaying the history: {project} under {policy} ({done}/{commits} commits walked)")

    return progress


def _replay_document(path: Path) -> dict:
    """A replay document kept from earlier runs (--join), read before the walk so a wrong one fails at once."""
    import json

    try:
        document = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise UserError(f"{path}: not a replay document ({error})") from None
    if not isinstance(document, dict) or not {"created", "projects"} <= document.keys():
        raise UserError(f"{path}: not a replay document (written by `selector evaluate --replay`: replay.json)")
    return document


def _shipped_or_given(bundle_path: Path | None):
    """The bundle given, else the shipped one, loaded as select loads it."""
    from perf_selector.models.bundle import BundleError, load_bundle
    from perf_selector.selector.selection.shipped_model import shipped_bundle_path

    bundle_path = bundle_path or shipped_bundle_path()
    if bundle_path is None:
        raise UserError("this install carries no shipped model; give one with --bundle")
    try:
        return load_bundle(bundle_path, portable=True)
    except BundleError as error:
        raise UserError(f"{bundle_path}: {error}") from None


def _training_projects(stores, method4: dict | None) -> list:
    """Every store's project with the tuples the shipped bundle is trained on (Method 4's, as
    `evaluate --write-model` and corpus/risk_bound.py load them), in the stores' order: a bundle
    trained as the shipped one on the others learns from the same kind of tuples, ancestors a few
    commits back too."""
    from perf_selector.selector.evaluation.project_evaluation import load_projects

    with stderr.status("building the training tuples and features") as status:
        return load_projects(stores, method4 or {"k": 5, "first": None, "epoch_days": None},
                             on_project=lambda name: status.update(f"building the training tuples and features: {name}"))


def _labelled_projects(stores) -> list:
    """Every store's project with every labelled closest-ancestor pair's features."""
    from perf_selector.selector.evaluation.project_evaluation import load_projects

    with stderr.status("building every labelled pair's features") as status:
        # every closest-ancestor pair: k-fold's tuples (its folds are not used)
        return load_projects(stores, {"folds": 2}, method="kfold",
                             on_project=lambda name: status.update(f"building every labelled pair's features: {name}"))
