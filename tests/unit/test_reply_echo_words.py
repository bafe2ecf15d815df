"""The echo check reads words with the project's one tokenizer (`strata.core.words`): a
persona or channel prompt written in any script is caught when a reply repeats it, as one in
English is."""

from __future__ import annotations

from strata.bot.reply_checks import check_reply

PERSONA_RU = "Ты тёплый и внимательный собеседник, который помнит, что ему рассказывают люди."
PERSONA_EL = "Απάντα σύντομα και φυσικά."


def test_a_persona_in_another_script_repeated_is_an_echo() -> None:
    reply = ("Привет! Ты тёплый и внимательный собеседник, который помнит, что ему "
             "рассказывают люди. Как прошла поездка?")
    checked = check_reply(reply, (), (PERSONA_RU,))
    assert checked.caught == ("echo",)
    assert checked.text == "Привет! Как прошла поездка?"
    assert check_reply("Καλημέρα! Απάντα σύντομα και φυσικά.", (), (PERSONA_EL,)).caught == (
        "echo",)


def test_words_in_another_script_shared_with_the_persona_are_not_an_echo() -> None:
    reply = "Я помню, что ты рассказывал про поездку."
    assert check_reply(reply, (), (PERSONA_RU,)).text == reply
