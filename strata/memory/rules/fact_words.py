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
# Professions whose stems are no everyday word's (not "reporter", "report"; "animator",
# "animal"; "cobbler", a pie), so a job named alone is one.
PROFESSIONS = PROFESSIONS | frozenset((
    "actuary", "anaesthetist", "anesthesiologist", "archaeologist", "archivist", "astronaut",
    "attorney", "auditor", "banker", "barrister", "bartender", "beautician", "beekeeper",
    "blacksmith", "bookkeeper", "botanist", "bricklayer", "cardiologist", "caregiver",
    "caretaker", "cellist", "chauffeur", "chiropractor", "columnist", "copywriter",
    "counsellor", "counselor", "courier", "dermatologist", "dietitian", "dressmaker",
    "drummer", "ecologist", "entrepreneur", "epidemiologist", "filmmaker", "fisherman",
    "florist", "geologist", "groundskeeper", "guitarist", "headteacher", "hygienist",
    "janitor", "lifeguard", "linguist", "locksmith", "lumberjack", "machinist", "masseuse",
    "mathematician", "miner", "notary", "novelist", "nutritionist", "optometrist",
    "orthodontist", "osteopath", "paediatrician", "paralegal", "pediatrician", "physician",
    "pianist", "podiatrist", "poet", "politician", "postwoman", "psychiatrist", "radiologist",
    "rancher", "realtor", "roofer", "sailor", "salesman", "saleswoman", "sculptor",
    "seamstress", "sheriff", "solicitor", "sommelier", "statistician", "stewardess",
    "stonemason", "stylist", "surveyor", "tattooist", "technician", "tiler", "trucker",
    "tutor", "typist", "videographer", "violinist", "vocalist", "welder", "zookeeper",
    "zoologist",
))
