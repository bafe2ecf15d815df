"""The closed word lists a kind of fact is stated in, shared by the model-free fact reader
(`strata.memory.facts.plain`) and recall's fact bridges (`strata.memory.recall.bridge`), so a
job the reader stores and a job the bridge searches for are the same words.
"""

from __future__ import annotations

PROFESSIONS = frozenset((
    "accountant", "actor", "actress", "architect", "artist", "baker", "barista", "barber",
    "biologist", "builder", "butcher", "carpenter", "cashier", "chef", "chemist", "cleaner",
    "coach", "consultant", "cook", "dancer", "dentist", "designer", "developer", "doctor",
    "driver", "economist", "editor", "electrician", "engineer", "farmer", "firefighter",
    "gardener", "hairdresser", "journalist", "judge", "lawyer", "lecturer", "librarian",
    "mechanic", "midwife", "musician", "nanny", "nurse", "optician", "painter", "paramedic",
    "pharmacist", "photographer", "physicist", "physiotherapist", "pilot", "plumber",
    "policeman", "policewoman", "postman", "professor", "programmer", "psychologist",
    "receptionist", "researcher", "scientist", "secretary", "singer", "soldier", "student",
    "surgeon", "tailor", "teacher", "therapist", "translator", "vet", "veterinarian",
    "waiter", "waitress", "writer",
))
