"""``report_path`` is confined (issue 32, F9): ``reports/../elsewhere/keep.txt`` replaced
``keep.txt``, symbolic links were followed, and a templated path let whoever triggers a run
choose the file. Real files on the local disk, and a real DAG run for the templated case."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from airflow_provider_namelookup.evaluation.destination import GENERATOR, write_text

REPORT = f"<!DOCTYPE html>\n<html><head>{GENERATOR}</head><body>report</body></html>"


def test_a_path_that_goes_up_a_folder_is_refused_and_the_file_kept(tmp_path: Path) -> None:
    keep = tmp_path / "elsewhere" / "keep.txt"
    keep.parent.mkdir()
    keep.write_text("mine")
    with pytest.raises(ValueError, match=r"report_path must not go up a folder \('..'\) without report_base_dir"):
        write_text(str(tmp_path / "reports" / ".." / "elsewhere" / "keep.txt"), REPORT)
    assert keep.read_text() == "mine"


def test_a_path_through_a_symbolic_link_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "private"
    target.mkdir()
    (tmp_path / "reports").symlink_to(target)
    with pytest.raises(ValueError, match="runs through the symbolic link"):
        write_text(str(tmp_path / "reports" / "a.html"), REPORT)
    (target / "keep.txt").write_text("mine")
    (tmp_path / "link.html").symlink_to(target / "keep.txt")
    with pytest.raises(ValueError, match="runs through the symbolic link"):
        write_text(str(tmp_path / "link.html"), REPORT)
    assert (target / "keep.txt").read_text() == "mine" and not (target / "a.html").exists()


def test_with_a_base_folder_links_and_dots_may_only_lead_inside_it(tmp_path: Path) -> None:
    base = tmp_path / "reports"
    (base / "daily").mkdir(parents=True)
    (base / "latest").symlink_to(base / "daily")
    written = write_text(str(base / "latest" / ".." / "daily" / "a.html"), REPORT, base=str(base))
    assert written == str(base / "daily" / "a.html") and Path(written).read_text() == REPORT
    with pytest.raises(ValueError, match="outside report_base_dir"):
        write_text(str(base / ".." / "a.html"), REPORT, base=str(base))
    (base / "out").symlink_to(tmp_path)
    with pytest.raises(ValueError, match="outside report_base_dir"):
        write_text(str(base / "out" / "a.html"), REPORT, base=str(base))
    assert not (tmp_path / "a.html").exists()


def test_only_a_report_it_wrote_is_replaced_and_never_half_written(tmp_path: Path) -> None:
    report = tmp_path / "accuracy.html"
    write_text(str(report), REPORT)
    write_text(str(report), REPORT.replace("report</body>", "again</body>"))  # a rerun replaces its own
    assert "again" in report.read_text()
    other = tmp_path / "notes.html"
    other.write_text("<html>someone's notes</html>")
    with pytest.raises(ValueError, match="is a file this provider did not write; it is never replaced"):
        write_text(str(other), REPORT)
    assert other.read_text() == "<html>someone's notes</html>"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["accuracy.html", "notes.html"]  # no temporary left


def test_an_object_store_path_that_goes_up_or_out_is_refused() -> None:
    with pytest.raises(ValueError, match="must not go up a folder"):
        write_text("memory://reports/../private/a.html", REPORT)
    with pytest.raises(ValueError, match="outside report_base_dir"):
        write_text("memory://private/a.html", REPORT, base="memory://reports")


@pytest.mark.usefixtures("airflow_db")
def test_a_run_conf_cannot_move_the_report_out_of_its_base(namelookup: Any, write_dag: Any, tmp_path: Path) -> None:
    base = tmp_path / "reports"
    keep = tmp_path / "keep.txt"
    keep.write_text("mine")
    dag = write_dag(f"""
        from airflow_provider_namelookup.operators import GenderEvaluationOperator
        GenderEvaluationOperator(task_id="accuracy", answers=[{{"gender": "female", "probability": 0.9}}], labels=["f"],
                                 report_path="{{{{ params.report }}}}", params={{"report": {str(base / 'a.html')!r}}},
                                 report_base_dir={str(base)!r}, retries=2)
    """)
    assert str(dag.run().state) == "success" and (base / "a.html").is_file()
    dag.run(run_conf={"report": str(base / ".." / "keep.txt")})
    assert dag.state("accuracy") == "failed" and dag.last_run.get_task_instance("accuracy").try_number == 1
    assert keep.read_text() == "mine"
