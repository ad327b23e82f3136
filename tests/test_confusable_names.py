"""A name that mixes scripts is shown escaped, with the script of each letter that is not Latin: a Cyrillic
'і' printed raw in "wіde-deep is not valid ... such as wide-deep" looks like the example it is told to follow."""

from __future__ import annotations

from conftest import run_tfjobgen
from jobs import SMALL_JOB

from tfjobgen.inputs.problems import visible


def test_a_cyrillic_letter_among_latin_ones_is_escaped_and_its_script_named():
    assert visible("wіde-deep") == ("w\\u0456de-deep (\\u0456 is U+0456 CYRILLIC SMALL LETTER "
                                    "BYELORUSSIAN-UKRAINIAN I, a Cyrillic letter that looks like Latin 'i')")


def test_a_word_of_lookalikes_alone_is_escaped_too():
    # every letter Cyrillic, and every one looks like a Latin letter: "асе" reads as "ace"
    shown = visible("name асе")
    assert shown.startswith("name \\u0430\\u0441\\u0435 (") and "a Cyrillic letter that looks like Latin 'c'" in shown


def test_a_greek_letter_among_latin_ones():
    assert "a Greek letter that looks like Latin 'o'" in visible("mοdel")


def test_a_letter_of_another_script_that_looks_like_none_is_named_among_latin_ones():
    assert visible("mл") == "m\\u043b (\\u043b is U+043B CYRILLIC SMALL LETTER EL, a Cyrillic letter among Latin ones)"


def test_words_of_one_other_script_and_plain_text_are_left_alone():
    assert visible("модель") == "модель"
    assert visible("wide-deep: café") == "wide-deep: café"  # é is Latin
    assert visible("ok") == "ok"


def test_invisible_and_confusable_characters_together():
    assert visible("wіde\u200b") == ("w\\u0456de\\u200b (\\u200b is U+200B ZERO WIDTH SPACE, which cannot be seen; "
                                     "\\u0456 is U+0456 CYRILLIC SMALL LETTER BYELORUSSIAN-UKRAINIAN I, a Cyrillic "
                                     "letter that looks like Latin 'i')")


def test_validate_prints_the_name_escaped(tmp_path):
    (tmp_path / "job.yaml").write_text(SMALL_JOB.replace("name: ok", "name: wіde-deep"))
    proc = run_tfjobgen("validate", "job.yaml", cwd=tmp_path)
    assert proc.returncode == 1 and "wіde" not in proc.stderr, proc.stderr
    assert 'job.yaml:4: metadata.name: "w\\u0456de-deep" is not valid' in proc.stderr, proc.stderr
    assert "a Cyrillic letter that looks like Latin 'i'" in proc.stderr
