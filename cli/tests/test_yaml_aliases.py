"""`apply -f` and every `-f FILE` refuse YAML anchors and aliases, as the server does (issue 9, item 4)."""
import pytest

from cli.documents import parse_documents
from cli.errors import InvalidInput


@pytest.mark.parametrize("text", [
    "a: &x [1, 2]\nb: *x\n",
    "base: &b {cpu: 1}\nitem:\n  <<: *b\n",
    "name: one\n---\nname: two\nextra: &e 1\n",
])
def test_anchors_and_aliases_are_refused_with_their_line(text):
    with pytest.raises(InvalidInput) as refused:
        parse_documents(text, "job.yml")
    assert "YAML anchors and aliases are not accepted" in str(refused.value) and "line" in str(refused.value)


def test_the_alias_bomb_is_refused_before_it_is_built():
    lines = ["command: echo", "properties:", "  a: &a [x,x,x,x,x,x,x,x,x]"]
    for previous, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"  {name}: &{name} [" + ",".join([f"*{previous}"] * 9) + "]")
    with pytest.raises(InvalidInput):
        parse_documents("\n".join(lines) + "\n", "bomb.yml")


def test_plain_yaml_still_loads():
    assert [document.body for document in parse_documents("a: 1\n---\nb: [x, y]\n", "f.yml")] == [{"a": 1}, {"b": ["x", "y"]}]
