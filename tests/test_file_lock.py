"""A lock file that does not outlive its lock (issue 49: hundreds of empty lock files were left
in the temporary directory): holders take turns, and nothing is left once the last lets go."""

from __future__ import annotations

import threading
import time

from perf_selector.collectors.file_lock import held_and_removed


def test_holders_take_turns_and_leave_no_file(tmp_path):
    path = tmp_path / "selector-measure-x.lock"
    inside, overlaps = [], []

    def hold(name: str) -> None:
        for _ in range(20):
            with held_and_removed(path):
                if inside:
                    overlaps.append((name, list(inside)))
                inside.append(name)
                time.sleep(0.001)
                inside.remove(name)

    threads = [threading.Thread(target=hold, args=(f"t{i}",)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads)
    assert overlaps == []  # never two holders at once, though each removed the file it held
    assert not path.exists() and list(tmp_path.iterdir()) == []


def test_a_slot_is_claimed_in_a_folder_its_last_holder_removed(tmp_path):
    """The last holder of a slot removes its lock file and the emptied folder; a claim that made
    the folder a moment before makes it again rather than fail."""
    from perf_selector.collectors.file_lock import remove_held
    from perf_selector.collectors.slots import claim_slot

    folder = tmp_path / "slots"
    slot, handle = claim_slot(lambda number: folder / f"slot-{number}.lock")
    assert slot == 0 and (folder / "slot-0.lock").exists()
    remove_held(folder / "slot-0.lock", handle)
    folder.rmdir()  # as the last holder leaves it
    slot, handle = claim_slot(lambda number: folder / f"slot-{number}.lock")
    assert slot == 0 and (folder / "slot-0.lock").exists()
    second, other = claim_slot(lambda number: folder / f"slot-{number}.lock")
    assert second == 1  # slot 0 is held
    remove_held(folder / "slot-1.lock", other)
    remove_held(folder / "slot-0.lock", handle)
    assert list(folder.iterdir()) == []


def test_the_cache_directory_falls_back_to_the_users_own_in_tmp_when_home_is_read_only(tmp_path, monkeypatch):
    import os
    import tempfile

    from perf_selector.collectors.cache_home import cache_home

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert cache_home() == tmp_path / "cache" / "perf-selector" and cache_home().is_dir()
    read_only = tmp_path / "home"
    read_only.mkdir(mode=0o500)
    monkeypatch.setenv("XDG_CACHE_HOME", str(read_only / "cache"))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    if os.access(read_only, os.W_OK):  # root writes anywhere: make the folder fail another way
        (read_only / "cache").write_text("a file where the folder should be")
    assert cache_home() == tmp_path / "tmp" / f"perf-selector-cache-{os.getuid()}" and cache_home().is_dir()
