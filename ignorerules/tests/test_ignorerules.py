"""The ignore rules the CLI packs by and a local job copies by: which file a folder's rules come from, and who wins."""
import pathspec

import ignorerules

COMPILE = pathspec.GitIgnoreSpec.from_lines


def rules(files: dict[str, bytes | None], relative: str = "") -> ignorerules.Rules:
    return ignorerules.folder_rules(files, relative, files.get, COMPILE)


def test_amlignore_wins_over_gitignore():
    both = rules({".amlignore": b"*.bin\n", ".gitignore": b"*.txt\n"})
    assert ignorerules.ignored(both, "a.bin") and not ignorerules.ignored(both, "a.txt")
    only_git = rules({".gitignore": b"*.txt\n"})
    assert ignorerules.ignored(only_git, "a.txt")


def test_a_folder_without_a_readable_ignore_file_has_no_rules_of_its_own():
    assert rules({"train.py": b""}) == []
    assert rules({".amlignore": None, ".gitignore": b"*\n"}) == []  # a link or a folder named .amlignore: unread


def test_a_deeper_folder_overrides_its_parents_below_it():
    here = rules({".gitignore": b"*.log\n"}) + rules({".gitignore": b"!keep.log\n"}, "logs")
    assert ignorerules.ignored(here, "a.log") and ignorerules.ignored(here, "other/b.log")
    assert not ignorerules.ignored(here, "logs/keep.log")
    assert ignorerules.ignored(here, "logs/drop.log")


def test_folders_are_matched_with_a_trailing_slash():
    here = rules({".amlignore": b"data/\n"})
    assert ignorerules.ignored(here, "data/") and not ignorerules.ignored(here, "data")


def test_only_the_first_64_kib_are_read_and_bad_utf8_is_no_refusal():
    long = b"#" * ignorerules.MAX_IGNORE_FILE + b"\n*.py\n"
    assert not ignorerules.ignored(rules({".gitignore": long}), "a.py")
    assert ignorerules.ignored(rules({".gitignore": b"\xff\xfe\n*.py\n"}), "a.py")


def test_nothing_matches_without_rules():
    assert not ignorerules.ignored([], "anything")
