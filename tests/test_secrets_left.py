"""The session check for key files left in the temp directory finds them, and waits for
processes that remove theirs at exit."""

from __future__ import annotations

import threading

from tests import secrets_left


def test_new_pem_files_are_found_and_others_are_not(tmp_path):
    (tmp_path / "tmpold").write_text("-----BEGIN CERTIFICATE-----\n")
    before = secrets_left.pem_files(tmp_path)
    (tmp_path / "tmpkey").write_text("-----BEGIN PRIVATE KEY-----\n")
    (tmp_path / "tmpnotes").write_text("not a key")
    (tmp_path / "server.pem").write_text("-----BEGIN CERTIFICATE-----\n")  # not a temp name
    (tmp_path / "tmpdir").mkdir()
    assert secrets_left.left_since(before, tmp_path, settle=0) == [tmp_path / "tmpkey"]


def test_a_file_removed_while_settling_is_not_left(tmp_path):
    key = tmp_path / "tmpkey"
    key.write_text("-----BEGIN PRIVATE KEY-----\n")
    threading.Timer(0.3, key.unlink).start()  # a process exiting, running its atexit
    assert secrets_left.left_since(set(), tmp_path, settle=5) == []
