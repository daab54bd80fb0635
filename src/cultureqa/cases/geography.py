"""One authoritative country → continent map, with the name variants real sources use.

Case exports carry continent labels that are often wrong, so the benchmark never trusts them: the
continent is derived from the country (DESIGN.md §6). The map follows the UN M49 regions with the
Americas split the way the analysis needs: **North America is the United States and Canada
only**; Mexico, Central America, the Caribbean and South America are **Latin America**. M49 also
decides the border cases (Russia → Europe; Türkiye, Cyprus, the Caucasus and Kazakhstan → Asia).
Greenland and Bermuda are left out on purpose: they are neither the US/Canada nor Latin America.

Names are matched after normalisation (accents, case, punctuation, "St." → "Saint", a leading or
trailing "the"), so "Côte d'Ivoire", "Cote dIvoire" and "COTE D'IVOIRE" agree; ISO3 codes are
accepted as well. Unknown names raise :class:`UnknownCountryError` instead of guessing.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from functools import cache
from types import MappingProxyType

__all__ = [
    "CONTINENTS",
    "UnknownCountryError",
    "continent_of",
    "country_name",
    "iso3_of",
    "known_iso3",
    "normalize_name",
]

CONTINENTS: tuple[str, ...] = (
    "Africa", "Asia", "Europe", "North America", "Latin America", "Oceania",
)  # fmt: skip
"""The six continent labels every artifact uses."""

# ISO3:Name per continent; the 193 UN members plus territories that case sources mention.
_COUNTRIES: dict[str, str] = {
    "Africa": """DZA:Algeria; AGO:Angola; BEN:Benin; BWA:Botswana; BFA:Burkina Faso;
        BDI:Burundi; CPV:Cabo Verde; CMR:Cameroon; CAF:Central African Republic; TCD:Chad;
        COM:Comoros; COG:Republic of the Congo; COD:Democratic Republic of the Congo;
        CIV:Côte d'Ivoire; DJI:Djibouti; EGY:Egypt; GNQ:Equatorial Guinea; ERI:Eritrea;
        SWZ:Eswatini; ETH:Ethiopia; GAB:Gabon; GMB:Gambia; GHA:Ghana; GIN:Guinea;
        GNB:Guinea-Bissau; KEN:Kenya; LSO:Lesotho; LBR:Liberia; LBY:Libya; MDG:Madagascar;
        MWI:Malawi; MLI:Mali; MRT:Mauritania; MUS:Mauritius; MAR:Morocco; MOZ:Mozambique;
        NAM:Namibia; NER:Niger; NGA:Nigeria; RWA:Rwanda; STP:São Tomé and Príncipe;
        SEN:Senegal; SYC:Seychelles; SLE:Sierra Leone; SOM:Somalia; ZAF:South Africa;
        SSD:South Sudan; SDN:Sudan; TZA:Tanzania; TGO:Togo; TUN:Tunisia; UGA:Uganda;
        ZMB:Zambia; ZWE:Zimbabwe; ESH:Western Sahara""",
    "Asia": """AFG:Afghanistan; ARM:Armenia; AZE:Azerbaijan; BHR:Bahrain; BGD:Bangladesh;
        BTN:Bhutan; BRN:Brunei; KHM:Cambodia; CHN:China; CYP:Cyprus; GEO:Georgia; IND:India;
        IDN:Indonesia; IRN:Iran; IRQ:Iraq; ISR:Israel; JPN:Japan; JOR:Jordan; KAZ:Kazakhstan;
        KWT:Kuwait; KGZ:Kyrgyzstan; LAO:Laos; LBN:Lebanon; MYS:Malaysia; MDV:Maldives;
        MNG:Mongolia; MMR:Myanmar; NPL:Nepal; PRK:North Korea; OMN:Oman; PAK:Pakistan;
        PHL:Philippines; QAT:Qatar; KOR:South Korea; SAU:Saudi Arabia; SGP:Singapore;
        LKA:Sri Lanka; SYR:Syria; TJK:Tajikistan; THA:Thailand; TLS:Timor-Leste; TUR:Türkiye;
        TKM:Turkmenistan; ARE:United Arab Emirates; UZB:Uzbekistan; VNM:Vietnam; YEM:Yemen;
        PSE:Palestine; TWN:Taiwan; HKG:Hong Kong; MAC:Macao""",
    "Europe": """ALB:Albania; AND:Andorra; AUT:Austria; BLR:Belarus; BEL:Belgium;
        BIH:Bosnia and Herzegovina; BGR:Bulgaria; HRV:Croatia; CZE:Czechia; DNK:Denmark;
        EST:Estonia; FIN:Finland; FRA:France; DEU:Germany; GRC:Greece; HUN:Hungary; ISL:Iceland;
        IRL:Ireland; ITA:Italy; LVA:Latvia; LIE:Liechtenstein; LTU:Lithuania; LUX:Luxembourg;
        MLT:Malta; MDA:Moldova; MCO:Monaco; MNE:Montenegro; NLD:Netherlands;
        MKD:North Macedonia; NOR:Norway; POL:Poland; PRT:Portugal; ROU:Romania; RUS:Russia;
        SMR:San Marino; SRB:Serbia; SVK:Slovakia; SVN:Slovenia; ESP:Spain; SWE:Sweden;
        CHE:Switzerland; UKR:Ukraine; GBR:United Kingdom; VAT:Vatican City; XKX:Kosovo""",
    "North America": """USA:United States; CAN:Canada""",
    "Latin America": """ATG:Antigua and Barbuda; ARG:Argentina; BHS:Bahamas; BRB:Barbados;
        BLZ:Belize; BOL:Bolivia; BRA:Brazil; CHL:Chile; COL:Colombia; CRI:Costa Rica; CUB:Cuba;
        DMA:Dominica; DOM:Dominican Republic; ECU:Ecuador; SLV:El Salvador; GRD:Grenada;
        GTM:Guatemala; GUY:Guyana; HTI:Haiti; HND:Honduras; JAM:Jamaica; MEX:Mexico;
        NIC:Nicaragua; PAN:Panama; PRY:Paraguay; PER:Peru; KNA:Saint Kitts and Nevis;
        LCA:Saint Lucia; VCT:Saint Vincent and the Grenadines; SUR:Suriname;
        TTO:Trinidad and Tobago; URY:Uruguay; VEN:Venezuela; PRI:Puerto Rico""",
    "Oceania": """AUS:Australia; FJI:Fiji; KIR:Kiribati; MHL:Marshall Islands; FSM:Micronesia;
        NRU:Nauru; NZL:New Zealand; PLW:Palau; PNG:Papua New Guinea; WSM:Samoa;
        SLB:Solomon Islands; TON:Tonga; TUV:Tuvalu; VUT:Vanuatu""",
}

# Variants seen in World Bank, UNDP, Freedom House and case exports; canonical names match too.
_ALIASES: dict[str, tuple[str, ...]] = {
    "USA": ("US", "U.S.", "U.S.A.", "United States of America"),
    "GBR": ("UK", "U.K.", "Great Britain", "Britain", "England", "Scotland", "Wales",
            "Northern Ireland", "United Kingdom of Great Britain and Northern Ireland"),
    "TUR": ("Turkey", "Turkiye", "Republic of Türkiye"),
    "CIV": ("Ivory Coast",),
    "KOR": ("Korea, Rep.", "Korea (Republic of)", "Republic of Korea", "Korea, South"),
    "PRK": ("Korea, Dem. People's Rep.", "Korea (Democratic People's Rep. of)", "DPRK",
            "Democratic People's Republic of Korea", "Korea, North"),
    "RUS": ("Russian Federation",),
    "IRN": ("Iran (Islamic Republic of)", "Iran, Islamic Rep."),
    "EGY": ("Egypt, Arab Rep.",),
    "VNM": ("Viet Nam",),
    "LAO": ("Lao PDR", "Lao People's Democratic Republic"),
    "SYR": ("Syrian Arab Republic",),
    "VEN": ("Venezuela, RB", "Venezuela (Bolivarian Republic of)"),
    "BOL": ("Bolivia (Plurinational State of)",),
    "TZA": ("Tanzania (United Republic of)", "United Republic of Tanzania"),
    "MDA": ("Moldova (Republic of)", "Republic of Moldova"),
    "FSM": ("Micronesia (Federated States of)", "Micronesia, Fed. Sts.",
            "Federated States of Micronesia"),
    "COG": ("Congo", "Congo, Rep.", "Congo (Brazzaville)", "Republic of Congo"),
    "COD": ("Congo, Dem. Rep.", "Congo (Kinshasa)", "Congo (Democratic Republic of the)",
            "DR Congo", "DRC"),
    "GMB": ("Gambia, The", "The Gambia"),
    "BHS": ("Bahamas, The", "The Bahamas"),
    "YEM": ("Yemen, Rep.",),
    "KGZ": ("Kyrgyz Republic",),
    "SVK": ("Slovak Republic",),
    "CZE": ("Czech Republic",),
    "MKD": ("Macedonia", "Republic of North Macedonia"),
    "SWZ": ("Swaziland", "Eswatini (Kingdom of)"),
    "CPV": ("Cape Verde",),
    "TLS": ("East Timor",),
    "MMR": ("Burma",),
    "BRN": ("Brunei Darussalam",),
    "KNA": ("St. Kitts and Nevis",),
    "LCA": ("St. Lucia",),
    "VCT": ("St. Vincent and the Grenadines",),
    "HKG": ("Hong Kong SAR, China", "Hong Kong, China (SAR)"),
    "MAC": ("Macao SAR, China", "Macau"),
    "PSE": ("Palestine, State of", "State of Palestine", "West Bank and Gaza"),
    "NLD": ("Holland",),
    "VAT": ("Holy See",),
    "XKX": ("Republic of Kosovo",),
}  # fmt: skip


class UnknownCountryError(ValueError):
    """A country name or code is not in the map; the message suggests close matches."""


def normalize_name(name: str) -> str:
    """Fold accents, case and punctuation so spelling variants of one name compare equal."""
    text = unicodedata.normalize("NFKD", name)
    text = "".join(ch for ch in text if not unicodedata.combining(ch)).casefold()
    text = text.replace("&", " and ").replace("'", "").replace("’", "")
    text = re.sub(r"[^a-z0-9]+", " ", text).strip()
    text = re.sub(r"\bst\b", "saint", text)
    return re.sub(r"^the\s+|\s+the$", "", text)


@cache
def _tables() -> tuple[MappingProxyType[str, str], MappingProxyType[str, str], dict[str, str]]:
    """(iso3 → continent, iso3 → name, normalised name → iso3), built once."""
    continent: dict[str, str] = {}
    names: dict[str, str] = {}
    for label, block in _COUNTRIES.items():
        for entry in block.split(";"):
            code, name = (part.strip() for part in entry.split(":", 1))
            continent[code], names[code] = label, name
    lookup = {normalize_name(name): code for code, name in names.items()}
    for code, aliases in _ALIASES.items():
        lookup.update({normalize_name(alias): code for alias in aliases})
    return MappingProxyType(continent), MappingProxyType(names), lookup


def known_iso3() -> tuple[str, ...]:
    """Every ISO3 code the map knows, sorted."""
    return tuple(sorted(_tables()[0]))


def iso3_of(country: str) -> str:
    """ISO3 code for a country name, alias or code; raises :class:`UnknownCountryError`."""
    continent, _, lookup = _tables()
    text = country.strip()
    if text.upper() in continent:
        return text.upper()
    code = lookup.get(normalize_name(text))
    if code is None:
        close = difflib.get_close_matches(normalize_name(text), list(lookup), n=3, cutoff=0.75)
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        raise UnknownCountryError(f"unknown country {country!r}{hint}")
    return code


def continent_of(country: str) -> str:
    """Continent label (one of :data:`CONTINENTS`) for a country name, alias or ISO3 code."""
    return _tables()[0][iso3_of(country)]


def country_name(country: str) -> str:
    """Canonical English short name for a country name, alias or ISO3 code."""
    return _tables()[1][iso3_of(country)]
