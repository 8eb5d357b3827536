"""Provenance: a stage refuses inputs made from other params, or not the bytes their
stage recorded, and refuses to publish when params.yaml changes under it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.config import PROJECT_ROOT, load_params, provenance
from pipeline.config.load import composed_yaml
from pipeline.core.errors import ConfigError
from pipeline.experiments.faithfulness import stage as faithfulness
from pipeline.experiments.roar import stage as roar
from pipeline.experiments.study import stage as study
from pipeline.stages import evaluate, generate, report, train
from tests.conftest import composed, small_overrides, write_cells

STAGES = [generate, train, evaluate, study, faithfulness, roar, report]


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """The small config's generate..report outputs and records, made once."""
    root = tmp_path_factory.mktemp("built")
    (root / "params.yaml").write_text(composed_yaml(small_overrides()))
    write_cells(root, load_params(root / "params.yaml"))
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root)
        for stage in STAGES:
            stage.main()
    return root


@pytest.fixture
def workdir(built, tmp_path, monkeypatch) -> Path:
    for path in built.rglob("*"):
        if path.is_file():
            (tmp_path / path.relative_to(built)).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / path.relative_to(built)).write_bytes(path.read_bytes())
    monkeypatch.chdir(tmp_path)
    return tmp_path


def outputs(root: Path) -> dict[str, bytes]:
    files = sorted(p for p in root.rglob("*") if p.is_file())
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in files}


def set_param(root: Path, old: str, new: str) -> None:
    params = root / "params.yaml"
    assert old in params.read_text()
    params.write_text(params.read_text().replace(old, new, 1))


def test_each_record_names_the_stage_params_and_hashes_every_output(workdir):
    cfg = load_params()
    record = json.loads((workdir / "reports/provenance/train.json").read_text())
    assert record["params"]["train.lr"] == 0.6 and record["params"]["data.seed"] == 20260218
    assert set(record["params"]) == set(provenance.stage_params(cfg, "train"))
    assert sorted(record["outputs"]) == ["models/parameters.parquet", "reports/training.csv"]
    figures = json.loads((workdir / "reports/provenance/report.json").read_text())["outputs"]
    assert "reports/figures/study_pair_gaps.png" in figures and "reports/report.md" in figures
    for path, digest in {**record["outputs"], **figures}.items():
        assert provenance.sha256(path) == digest


def test_outputs_of_other_params_are_refused_downstream(workdir):
    """What a concurrent `dvc exp run -S train.lr=0.45` did to a running repro: the
    models were trained at 0.6, params.yaml now says 0.45."""
    before = outputs(workdir)
    set_param(workdir, "lr: 0.6", "lr: 0.45")
    with pytest.raises(ConfigError) as caught:
        evaluate.main()
    message = str(caught.value)
    assert "models/parameters.parquet was made by the train stage" in message
    assert "(train.lr 0.6→0.45;" in message and "\n" not in message
    with pytest.raises(ConfigError, match=r"made by the train stage .*train.lr 0.6→0.45"):
        report.main()
    changed = {k for k, v in outputs(workdir).items() if before.get(k) != v}
    assert changed == {"params.yaml"}


def test_a_hand_edited_or_half_published_output_is_refused(workdir):
    metrics = workdir / "reports/metrics.json"
    metrics.write_text(metrics.read_text().replace('"sequences": 120', '"sequences": 121'))
    with pytest.raises(ConfigError, match="reports/metrics.json is not what the evaluate stage"):
        report.main()


def test_a_stage_does_not_publish_when_params_change_under_it(workdir, monkeypatch):
    before = outputs(workdir)
    real_run = train.run

    def run_while_params_change(cfg, frame):
        result = real_run(cfg, frame)
        set_param(workdir, "epochs: 30", "epochs: 31")  # e.g. `dvc exp run -S` meanwhile
        return result

    monkeypatch.setattr(train, "run", run_while_params_change)
    with pytest.raises(ConfigError) as caught:
        train.main()
    assert str(caught.value).startswith(
        "params.yaml changed while the train stage ran (train.epochs 30→31)"
    )
    changed = {k for k, v in outputs(workdir).items() if before.get(k) != v}
    assert changed == {"params.yaml"}


def test_unchanged_inputs_pass_and_rerunning_gives_the_same_records(workdir, built):
    evaluate.main()
    report.main()
    assert outputs(workdir) == outputs(built)


def test_a_full_disk_leaves_every_old_output_and_says_so_in_one_line(
    workdir, monkeypatch, run_entry
):
    """Issue 22: after a changed faithfulness.order_seed on a nearly full disk,
    faithfulness.json was new while faithfulness.parquet and the record were old,
    and the error was a 15-line traceback."""
    import errno

    from pipeline.core import files

    set_param(workdir, "order_seed: 0", "order_seed: 5")
    before = outputs(workdir)
    real_fdopen = files.os.fdopen
    written = []

    class FullDisk:
        def __init__(self, handle):
            self.handle = handle

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.handle.close()

        def write(self, payload):
            written.append(len(payload))
            if len(written) == 2:  # the stage's second output does not fit
                raise OSError(errno.ENOSPC, "No space left on device")
            return self.handle.write(payload)

    monkeypatch.setattr(files.os, "fdopen", lambda fd, mode: FullDisk(real_fdopen(fd, mode)))
    code, stderr = run_entry(faithfulness.main)
    assert code == 1
    assert stderr.startswith(
        f"error: no space left on the disk of {(workdir / 'reports/study').resolve()} for "
        "reports/study/faithfulness.parquet (needs "
    )
    assert stderr.count("\n") == 1
    changed = {k for k, v in outputs(workdir).items() if before.get(k) != v}
    assert changed == set()
    assert not list(workdir.rglob("*.tmp"))


# --- the grid's cells (issue 34, case 1: stale cells published as current) -----------------


def write_cell(folder: Path, task: str, variant: str, params: dict | None) -> Path:
    path = provenance.cell_path(str(folder), task, variant)
    path.parent.mkdir(parents=True, exist_ok=True)
    document = {"task": task, "variant": variant, "seeds": 3}
    if params is not None:
        document["params"] = params
    path.write_text(json.dumps(document))
    return path


def two_cells_cfg(*overrides: str):
    from pipeline.config import validate

    return validate(composed([*small_overrides(), *overrides]))


def test_only_the_configured_cells_are_read_each_checked_against_its_params(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cfg = two_cells_cfg()
    cells = {key: (cell.task, cell.variant) for key, cell in cfg.grid.cells.items()}
    for task, variant in cells.values():
        write_cell(tmp_path / cfg.paths.grid, task, variant, provenance.cell_params(cfg, "grid"))
    write_cell(tmp_path / cfg.paths.grid, "rise", "dropped", provenance.cell_params(cfg, "grid"))
    read = provenance.cell_documents(cfg, "grid")
    assert [(d["task"], d["variant"]) for _, d in read] == list(cells.values())  # not "dropped"


def test_a_cell_made_from_other_params_is_refused_with_the_key_that_changed(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    old = two_cells_cfg("grid.seeds=20")
    new = two_cells_cfg("grid.seeds=3", "data.seed=20260219")
    for cell in new.grid.cells.values():
        write_cell(
            tmp_path / new.paths.grid, cell.task, cell.variant, provenance.cell_params(old, "grid")
        )
    with pytest.raises(ConfigError) as error:
        provenance.cell_documents(new, "grid")
    message = str(error.value)
    assert "was made from other params than params.yaml holds" in message
    assert "grid.seeds 20→3" in message and "data.seed 20260218→20260219" in message
    assert message.endswith("then `dvc repro`") and "\n" not in message


def test_a_cell_without_a_record_or_without_a_file_is_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cfg = two_cells_cfg()
    first = next(iter(cfg.grid.cells.values()))
    with pytest.raises(ConfigError, match=r"missing reports/grid/.*: run `dvc repro`"):
        provenance.cell_documents(cfg, "grid")
    write_cell(tmp_path / cfg.paths.grid, first.task, first.variant, None)  # an old cell file
    with pytest.raises(ConfigError, match="no record of its params"):
        provenance.cell_documents(cfg, "grid")


def test_ctrl_c_between_two_renames_waits_until_the_stage_and_its_record_are_out(
    workdir, monkeypatch
):
    """The kill matrix (benchmarks/kill_matrix.py) found train half-published: SIGINT
    between two renames left its new parameters beside its old curves and record.
    The signal now acts once every output and the record are in place."""
    import os
    import signal

    from pipeline.core import files

    before = outputs(workdir)
    set_param(workdir, "lr: 0.6", "lr: 0.5")
    real_publish = files._publish
    renames = []

    def publish_then_ctrl_c(tmp, path):
        real_publish(tmp, path)
        renames.append(path)
        if len(renames) == 1:
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C right after the first rename

    monkeypatch.setattr(files, "_publish", publish_then_ctrl_c)
    # Python's own Ctrl-C, whatever an earlier test in this worker left installed
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            train.main()
    finally:
        signal.signal(signal.SIGINT, previous)
    assert len(renames) == 3  # parameters and curves, then the record
    changed = {k for k, v in outputs(workdir).items() if before.get(k) != v}
    cfg = load_params()
    published = {Path(p).as_posix() for p in (cfg.paths.parameters, cfg.paths.training_curves)} | {
        provenance.record_path(cfg, "train").as_posix()
    }
    assert changed == published | {"params.yaml"}
    provenance.verify_inputs(cfg, "evaluate")  # the record seals the new outputs


def _git(root: Path, *args: str, stdin: str | None = None) -> str:
    import subprocess

    done = subprocess.run(
        ["git", "-C", str(root), *args], capture_output=True, text=True, input=stdin
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_an_experiment_s_stage_refuses_params_that_are_not_its_own(tmp_path, monkeypatch):
    """Issue 60 case 2: `dvc exp run -n conc-a -S ...`, then a second `dvc exp run -n
    conc-b -S ...` in the same workspace: DVC refuses conc-b as busy only after its -S
    rewrote params.yaml and its stash took DVC's ref (refs/exps/exec/EXEC_MERGE), then
    removes the ref. conc-a's stages must not publish (nor the track stage log) conc-b's
    change under conc-a's name."""
    text = (PROJECT_ROOT / "params.yaml").read_text()
    (tmp_path / "params.yaml").write_text(text)
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "add", "params.yaml")
    _git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base")
    head = _git(tmp_path, "rev-parse", "HEAD")

    def stash(name: str, params: str) -> None:
        """An experiment's stash commit, as DVC writes it, at DVC's ref."""
        blob = tmp_path / "stash-params.yaml"
        blob.write_text(params)
        sha = _git(tmp_path, "hash-object", "-w", str(blob))
        tree = _git(tmp_path, "mktree", stdin=f"100644 blob {sha}\tparams.yaml\n")
        commit = _git(
            tmp_path,
            "-c", "user.name=t", "-c", "user.email=t@t",
            "commit-tree", tree, "-p", head, "-m", f"dvc-exp:{head}:{head}:{name}",
        )  # fmt: skip
        _git(tmp_path, "update-ref", "refs/exps/exec/EXEC_MERGE", commit)

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DVC_ROOT", str(tmp_path))
    cfg = load_params(tmp_path / "params.yaml")
    monkeypatch.setenv("DVC_EXP_NAME", "conc-a")
    stash("conc-a", text)
    provenance.check_params_unchanged(cfg, "train")  # its own params: publishes
    changed = text.replace("lr: 0.6", "lr: 0.45", 1)
    assert changed != text
    stash("conc-a", changed)  # the workspace no longer holds conc-a's -S
    with pytest.raises(ConfigError) as caught:
        provenance.check_params_unchanged(cfg, "train")
    message = str(caught.value)
    assert message.startswith("params.yaml is not experiment conc-a's (train.lr 0.45→0.6)")
    assert "\n" not in message
    stash("conc-b", text)  # the second experiment's stash took DVC's ref
    with pytest.raises(ConfigError, match=r"another `dvc exp run` \(conc-b\) took the"):
        provenance.check_params_unchanged(cfg, "track")
    _git(tmp_path, "update-ref", "-d", "refs/exps/exec/EXEC_MERGE")  # its cleanup
    with pytest.raises(ConfigError, match="DVC's record of experiment conc-a .* is gone"):
        provenance.check_params_unchanged(cfg, "train")
    monkeypatch.delenv("DVC_EXP_NAME")  # `dvc repro`: no experiment to compare with
    provenance.check_params_unchanged(cfg, "train")


def test_a_queued_experiment_in_its_own_copy_is_not_checked_against_the_workspace(
    tmp_path, monkeypatch
):
    """A queued run works in a copy of its own (DVC_ROOT names the parent repo, which
    holds no EXEC_MERGE of it): no other `dvc exp run` shares that folder, and the
    check that refused every queued stage (test_queued_experiments_all_run) stays out."""
    copy, parent = tmp_path / "copy", tmp_path / "parent"
    for folder in (copy, parent):
        folder.mkdir()
        _git(folder, "init", "-q")
    (copy / "params.yaml").write_text((PROJECT_ROOT / "params.yaml").read_text())
    monkeypatch.chdir(copy)
    cfg = load_params(copy / "params.yaml")
    monkeypatch.setenv("DVC_EXP_NAME", "queued")
    monkeypatch.setenv("DVC_ROOT", str(parent))
    provenance.check_experiment_params(cfg, "train")  # no ref anywhere: not refused
    monkeypatch.setenv("DVC_ROOT", str(copy))  # a workspace run without DVC's ref
    with pytest.raises(ConfigError, match="is gone"):
        provenance.check_experiment_params(cfg, "train")
