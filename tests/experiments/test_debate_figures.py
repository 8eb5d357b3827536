"""Stage debate_figures (pipeline/experiments/debate/debate_figures.py): the debate's figures
from its cells, and one MLflow parent run per cell, logged once, in an experiment of
its own with the numbers under debate/."""

from __future__ import annotations

import json
import shutil

import pytest

from pipeline.config import PROJECT_ROOT, validate
from pipeline.config.load import composed_yaml
from pipeline.experiments.debate import debate_figures as stage
from pipeline.experiments.debate.figures import debate_figures
from tests.conftest import composed, write_cells

COMMITTED = sorted((PROJECT_ROOT / "reports/debate").glob("*.json"))


def committed_cells() -> list[dict]:
    return [json.loads(path.read_text()) for path in COMMITTED]


def test_the_figures_are_the_papers_four_and_repeat_byte_for_byte():
    pngs = debate_figures(committed_cells())
    assert sorted(pngs) == [
        "adversary_jsd.png",
        "consistent_adversary.png",
        "deception.png",
        "permuted_change.png",
    ]
    assert all(png.startswith(b"\x89PNG") for png in pngs.values())
    assert debate_figures(committed_cells()) == pngs


@pytest.fixture
def workdir(tmp_path, monkeypatch, store):
    overrides = [f"tracking.uri={store}", "tracking.experiment=lesson"]
    (tmp_path / "params.yaml").write_text(composed_yaml(overrides))
    monkeypatch.chdir(tmp_path)
    write_cells(tmp_path, validate(composed(overrides)))
    return tmp_path, store


def test_the_stage_writes_the_figures_and_logs_each_cell_once(workdir, capsys):
    from pipeline.tracking import search_parent_runs

    root, store = workdir
    stage.main()
    assert sorted(p.name for p in (root / "reports/debate_figures").iterdir()) == [
        "adversary_jsd.png",
        "consistent_adversary.png",
        "deception.png",
        "permuted_change.png",
    ]
    assert (root / "reports/provenance/debate_figures.json").exists()
    cells = len(validate(composed()).debate.cells)
    assert f"logged {cells} new of {cells} debate cells" in capsys.readouterr().out
    stage.main()
    assert f"logged 0 new of {cells} debate cells" in capsys.readouterr().out  # logged once
    parents, _ = search_parent_runs(store, "lesson-debate")  # not the lesson's versions
    assert search_parent_runs(store, "lesson")[0].empty
    rows = parents.set_index("tags.model")
    cell = json.loads((root / "reports/debate/lesson-window3.json").read_text())
    first = cell["adversary"][0]
    metric = f"metrics.debate/adversary/eps_{first['eps']:g}/median_max_jsd/median"
    assert rows.loc["window3", metric] == pytest.approx(first["median_max_jsd"]["median"])
    frozen = "metrics.debate/fixed_attention/frozen/mean"
    assert rows.loc["window3", frozen] == pytest.approx(cell["fixed_attention"]["frozen"]["mean"])
    assert rows.loc["window3", "tags.task"] == "lesson"


def test_a_cell_made_from_other_params_is_refused_and_nothing_is_drawn(workdir):
    from pipeline.core.errors import ConfigError

    root, _ = workdir
    path = root / "reports/debate/lesson-lesson.json"
    document = json.loads(path.read_text())
    document["params"]["debate.seeds"] = 3
    path.write_text(json.dumps(document))
    with pytest.raises(ConfigError, match=r"made from other params .*debate\.seeds"):
        stage.main()
    assert not (root / "reports/debate_figures").exists()
    shutil.rmtree(root / "reports/debate")
    with pytest.raises(ConfigError, match=r"missing reports/debate/lesson-lesson.json"):
        stage.main()


@pytest.mark.parametrize(
    "text, wrong",
    [
        ("not json {", "is not JSON (Expecting value at line 1 column 1)"),
        ('{"task": "lesson"', "is not JSON (Expecting ',' delimiter at line 1 column 18)"),
        ("[1, 2]", "is not a debate cell file (JSON list, not an object)"),
    ],
)
def test_a_corrupt_cell_file_is_one_line_naming_it_and_the_stage_to_rerun(
    text, wrong, workdir, run_entry
):
    """Issue 49, item 8: `not json {` in a debate cell file gave debate_figures a
    25-line JSONDecodeError traceback."""
    root, _ = workdir
    (root / "reports/debate/lesson-lesson.json").write_text(text)
    code, err = run_entry(stage.main)
    assert code == 1
    assert err == (
        f"error: reports/debate/lesson-lesson.json {wrong}: rerun "
        "`dvc repro -s debate@lesson-lesson`\n"
    )
    assert not (root / "reports/debate_figures").exists()
