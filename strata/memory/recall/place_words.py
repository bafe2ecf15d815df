"""Places said by name, for the bridges by kind (`strata.memory.recall.kind_words`): "Which
cities has Lena been to?" of "Back from Lisbon!", "What countries has Maria visited?" of "our
trip to Spain". Closed lists of well-known world cities (capitals and the largest or most
visited) and countries, written out as people write them; the bridge stems and lower-cases
them, so a name that is also an everyday word or a person's first name is left out ("Nice",
"Reading", "Cologne", "Sydney", "Sofia", "Jordan", "Chad", "Turkey", "Chile", "Georgia"); a
name of two words is searched by its rarer word ("New York" by "york").
"""

from __future__ import annotations

CITIES = (
    "london paris berlin madrid rome lisbon dublin amsterdam brussels vienna prague "
    "budapest warsaw krakow cracow copenhagen stockholm oslo helsinki reykjavik athens "
    "istanbul moscow kyiv kiev bucharest belgrade zagreb ljubljana bratislava tallinn "
    "riga vilnius edinburgh glasgow manchester liverpool birmingham barcelona seville "
    "valencia porto milan naples venice munich hamburg frankfurt zurich geneva lyon "
    "marseille tbilisi yerevan baku tokyo osaka kyoto seoul busan beijing shanghai kong "
    "taipei bangkok hanoi singapore jakarta manila delhi mumbai bangalore kolkata "
    "chennai karachi lahore dhaka kathmandu dubai doha riyadh tehran baghdad beirut "
    "jerusalem cairo marrakech casablanca tunis algiers lagos accra nairobi addis ababa "
    "kampala kigali johannesburg durban dakar melbourne brisbane perth auckland toronto "
    "montreal vancouver ottawa quebec calgary chicago boston seattle denver miami "
    "atlanta houston dallas philadelphia detroit portland sacramento honolulu anchorage "
    "nashville baltimore pittsburgh minneapolis cleveland tucson albuquerque york "
    "angeles vegas orleans guadalajara monterrey havana bogota medellin lima quito "
    "caracas aires montevideo asuncion rio brasilia"
)

COUNTRIES = (
    "england scotland wales ireland britain france germany spain portugal italy greece "
    "netherlands holland belgium luxembourg switzerland austria poland czechia slovakia "
    "hungary romania bulgaria serbia croatia slovenia bosnia albania montenegro "
    "macedonia denmark sweden norway finland iceland estonia latvia lithuania ukraine "
    "belarus russia moldova armenia azerbaijan cyprus malta morocco algeria tunisia "
    "libya egypt ethiopia kenya uganda tanzania rwanda nigeria ghana senegal cameroon "
    "zimbabwe zambia namibia botswana mozambique madagascar angola sudan somalia israel "
    "lebanon syria iraq iran qatar kuwait oman yemen afghanistan pakistan india nepal "
    "bhutan bangladesh lanka myanmar thailand laos cambodia vietnam malaysia indonesia "
    "philippines japan korea mongolia taiwan kazakhstan uzbekistan australia zealand "
    "canada usa america mexico guatemala honduras nicaragua panama cuba jamaica haiti "
    "colombia venezuela ecuador peru bolivia brazil paraguay uruguay argentina china"
)
