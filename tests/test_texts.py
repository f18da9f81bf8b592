"""Every language says everything: the same keys and the same format fields in each."""

import string

import pytest

from attncalc import texts


def fields(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name}


@pytest.mark.parametrize("lang", [lang for lang in texts.LANGS if lang != "en"])
def test_every_key_in_every_language_with_the_same_fields(lang):
    en, other = texts.table("en"), texts.table(lang)
    assert sorted(set(en) - set(other)) == [], f"missing in {lang}"
    assert sorted(set(other) - set(en)) == [], f"only in {lang}"
    for key, text in en.items():
        assert fields(other[key]) == fields(text), key
        assert other[key].strip(), key


def test_a_missing_key_is_an_error_not_an_empty_string():
    with pytest.raises(KeyError):
        texts.t("ui.no_such_key", "en")
