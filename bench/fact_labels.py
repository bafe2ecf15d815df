"""A labelled set for fact extraction: what a person says, and the durable facts about that
person it states. Each expected fact is a tuple of words that must all occur in a stored fact's
text (case-insensitive) for it to count as found. Negatives (hypotheticals, questions, other
people's facts, passing states, small talk) expect nothing. Written for this project.
"""

from __future__ import annotations

Label = tuple[str, tuple[tuple[str, ...], ...]]

LABELS: tuple[Label, ...] = (
    # Durable facts about the speaker.
    ("I live in Lyon.", (("lyon",),)),
    ("I moved to Berlin last spring for work.", (("berlin",),)),
    ("I'm a nurse at the children's hospital.", (("nurse",),)),
    ("I work as a software engineer at a bank.", (("engineer",),)),
    ("I'm vegetarian, have been for ten years.", (("vegetarian",),)),
    ("I'm allergic to peanuts.", (("peanut",),)),
    ("My daughter Emma just turned six.", (("emma",),)),
    ("I have two cats, Miso and Tofu.", (("miso",), ("tofu",))),
    ("I adopted a beagle called Pepper.", (("pepper",),)),
    ("My wife's name is Ana.", (("ana",),)),
    ("I play the cello in a community orchestra.", (("cello",),)),
    ("I run every morning before work.", (("run",),)),
    ("I'm learning Japanese; I take classes on Tuesdays.", (("japanese",),)),
    ("I grew up in Porto.", (("porto",),)),
    ("My birthday is on March 3rd.", (("march",),)),
    ("I drive a blue Volvo.", (("volvo",),)),
    ("I don't drink coffee, only tea.", (("tea",),)),
    ("I'm training for the Paris marathon in April.", (("marathon",),)),
    ("I studied chemistry at university.", (("chemistry",),)),
    ("I speak French and Spanish.", (("french",), ("spanish",))),
    ("My brother Tom lives in Oslo and I visit him every summer.", (("tom",),)),
    ("I'm a big fan of jazz, especially Coltrane.", (("jazz",),)),
    ("I have type 1 diabetes.", (("diabetes",),)),
    ("I work night shifts at the warehouse.", (("night",),)),
    ("I'm left-handed.", (("left",),)),
    ("I've been climbing at the Bloc gym for three years.", (("climb",),)),
    ("My favourite food is ramen.", (("ramen",),)),
    ("I'm married and we have three kids.", (("kids",),)),
    ("I volunteer at the food bank on Saturdays.", (("food bank",),)),
    ("I was born in 1988.", (("1988",),)),
    ("I can't stand horror movies.", (("horror",),)),
    ("I keep bees in my garden.", (("bee",),)),
    ("My mother is called Rosa and lives with us.", (("rosa",),)),
    ("I switched from Android to an iPhone this year.", (("iphone",),)),
    ("I'm a Catholic and go to mass on Sundays.", (("catholic",),)),
    ("I work from home three days a week.", (("home",),)),
    # Negatives: hypotheticals and plans that may not happen.
    ("Maybe I'll learn to surf someday.", ()),
    ("If I won the lottery I'd move to Tahiti.", ()),
    ("I might get a dog next year, not sure.", ()),
    ("What if I quit my job and opened a bakery?", ()),
    ("Suppose I went vegan, would that be hard?", ()),
    # Negatives: questions.
    ("What's the capital of Australia?", ()),
    ("Do you think I should learn Python?", ()),
    ("Can you recommend a good book about Rome?", ()),
    ("How long should I boil an egg?", ()),
    ("Is it going to rain tomorrow?", ()),
    # Negatives: other people's facts.
    ("My friend Sarah says she is moving to Madrid.", ()),
    ("Tom told me he loves skiing.", ()),
    ("According to my boss, the office is closing in June.", ()),
    ("My neighbour thinks the park is haunted.", ()),
    ("Dave claims he ran a marathon in under three hours.", ()),
    # Negatives: passing states and small talk.
    ("I'm tired today.", ()),
    ("Ugh, Mondays.", ()),
    ("haha that's funny", ()),
    ("Thanks, that helps!", ()),
    ("I'm a bit hungry right now.", ()),
    ("Good morning!", ()),
    ("ok", ()),
    ("It's so hot this afternoon.", ()),
    ("Just got back from the shop.", ()),
    ("Let me think about it.", ()),
    ("Wow, really?", ()),
)
