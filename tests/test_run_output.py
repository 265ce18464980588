"""A run's output is checked before the game is played, and a failed write never loses the run."""

import os
from pathlib import Path

import pandas as pd
import pytest

from llm_mesa.run_output import OutputError, check_output_dir, write_run


@pytest.mark.parametrize("out, fragment", [
    ("", "--out is empty"),
    ("/proc/llm-mesa-run", "cannot write in '/proc'"),
    ("x" * 300, "longer than file systems allow"),
])
def test_unwritable_destinations_are_refused_before_anything_runs(tmp_path, out, fragment):
    target = out if out in ("",) or out.startswith("/") else str(tmp_path / out)
    with pytest.raises(OutputError, match=fragment.replace("(", r"\(")):
        check_output_dir(target)


def test_a_folder_where_files_cannot_be_created_is_refused(tmp_path, monkeypatch):
    def read_only(*args, **kwargs):
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr("llm_mesa.run_output.new_folder", read_only)
    with pytest.raises(OutputError, match="cannot write in .*Read-only file system"):
        check_output_dir(tmp_path / "run")


def test_a_file_in_the_way_and_a_non_empty_directory_are_refused(tmp_path):
    (tmp_path / "file").write_text("x")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "a").write_text("x")
    with pytest.raises(OutputError, match="is a file"):
        check_output_dir(tmp_path / "file" / "run")
    with pytest.raises(OutputError, match="not empty"):
        check_output_dir(tmp_path / "full")
    assert check_output_dir(tmp_path / "new" / "deep") == tmp_path / "new" / "deep"
    assert not (tmp_path / "new").exists()  # checking creates nothing


def test_a_failed_rename_keeps_the_staged_run_and_says_where(tmp_path, monkeypatch):
    real_replace = os.replace

    def failing_replace(src, dst):
        if Path(dst).name == "run":
            raise OSError(28, "No space left on device")
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OutputError, match="No space left on device.*complete in") as info:
        write_run(tmp_path / "run", {"rounds": pd.DataFrame({"round": [0, 1]})}, {"ok": True}, {"kind": "test"})
    kept = Path(str(info.value).rsplit("complete in ", 1)[1])
    assert pd.read_parquet(kept / "rounds.parquet")["round"].tolist() == [0, 1]
    assert not (tmp_path / "run").exists()


def test_a_failed_staging_writes_the_run_to_the_temporary_folder_and_says_where(tmp_path, monkeypatch):
    real_to_parquet = pd.DataFrame.to_parquet

    def full_disk(self, target, *args, **kwargs):
        if str(tmp_path / "system-tmp") not in str(target):
            raise OSError(28, "No space left on device")
        return real_to_parquet(self, target, *args, **kwargs)

    monkeypatch.setattr(pd.DataFrame, "to_parquet", full_disk)
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "system-tmp"))
    (tmp_path / "system-tmp").mkdir()
    with pytest.raises(OutputError, match="No space left on device.*saved in") as info:
        write_run(tmp_path / "run", {"rounds": pd.DataFrame({"round": [0, 1]})}, {"ok": True}, {"kind": "test"})
    kept = Path(str(info.value).rsplit("saved in ", 1)[1].split(" instead")[0])
    assert pd.read_parquet(kept / "rounds.parquet")["round"].tolist() == [0, 1]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".run.")] == []  # no half-written staging
