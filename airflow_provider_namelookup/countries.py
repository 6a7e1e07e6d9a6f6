"""The spec's reference tables: countries (with their regions) and ethnic groups.

Both the client-side validation and the emulator read these tables, so the
provider and the local service agree on every code.

Example::

    >>> from airflow_provider_namelookup.countries import COUNTRIES, ETHNIC_GROUPS
    >>> COUNTRIES["DE"].name, COUNTRIES["DE"].statistical_region
    ('Germany', 'Western Europe')
    >>> ETHNIC_GROUPS["GERMANIC"]
    'Germanic (German, Austrian, Swiss)'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType


@dataclass(frozen=True)
class Country:
    """One row of the spec's country table."""

    code: str
    name: str
    statistical_region: str
    continental_region: str

    def as_origin_record(self, probability: float) -> dict[str, object]:
        """The ``country_of_origin[]`` element the service returns for this country."""
        return {
            "country_name": self.name,
            "country": self.code,
            "probability": probability,
            "continental_region": self.continental_region,
            "statistical_region": self.statistical_region,
        }


# (statistical region, continental region, "CODE Name, CODE Name, ...") in the
# spec's order. "AustraliaandNew Zealand" is spelled as the spec publishes it.
_TABLE: tuple[tuple[str, str, str], ...] = (
    ("Eastern Asia", "Asia", "CN China, JP Japan, KR South Korea, KP North Korea, TW Taiwan, "
     "HK Hong Kong, MO Macau, MN Mongolia"),
    ("Southern Asia", "Asia", "IN India, PK Pakistan, BD Bangladesh, IR Iran, AF Afghanistan, "
     "NP Nepal, LK Sri Lanka, BT Bhutan, MV Maldives"),
    ("South-eastern Asia", "Asia", "ID Indonesia, PH Philippines, VN Vietnam, TH Thailand, "
     "MM Myanmar, MY Malaysia, KH Cambodia, LA Laos, SG Singapore, TL East Timor, BN Brunei"),
    ("Western Asia", "Asia", "TR Turkey, IQ Iraq, SA Saudi Arabia, YE Yemen, SY Syria, "
     "AZ Azerbaijan, JO Jordan, AE United Arab Emirates, IL Israel, LB Lebanon, PS Palestine, "
     "OM Oman, KW Kuwait, GE Georgia, AM Armenia, QA Qatar, BH Bahrain, CY Cyprus"),
    ("Central Asia", "Asia", "UZ Uzbekistan, KZ Kazakhstan, TJ Tajikistan, KG Kyrgyzstan, "
     "TM Turkmenistan"),
    ("Northern America", "Americas", "US United States, CA Canada, BM Bermuda, GL Greenland, "
     "PM Saint Pierre and Miquelon"),
    ("South America", "Americas", "BR Brazil, CO Colombia, AR Argentina, PE Peru, VE Venezuela, "
     "CL Chile, EC Ecuador, BO Bolivia, PY Paraguay, UY Uruguay, GY Guyana, SR Suriname, "
     "GF French Guiana, FK Falkland Islands"),
    ("Central America", "Americas", "MX Mexico, GT Guatemala, HN Honduras, SV El Salvador, "
     "NI Nicaragua, CR Costa Rica, PA Panama, BZ Belize"),
    ("Caribbean", "Americas", "CU Cuba, HT Haiti, DO Dominican Republic, PR Puerto Rico, "
     "JM Jamaica, TT Trinidad and Tobago, GP Guadeloupe, BS Bahamas, MQ Martinique, "
     "BB Barbados, LC Saint Lucia, CW Curaçao, VC Saint Vincent and the Grenadines, "
     "GD Grenada, AW Aruba, VI United States Virgin Islands, AG Antigua and Barbuda, "
     "DM Dominica, KY Cayman Islands, KN Saint Kitts and Nevis, SX Sint Maarten, "
     "TC Turks and Caicos Islands, VG British Virgin Islands, BQ Caribbean Netherlands, "
     "AI Anguilla, MS Montserrat"),
    ("Western Africa", "Africa", "NG Nigeria, GH Ghana, CI Ivory Coast, NE Niger, "
     "BF Burkina Faso, ML Mali, SN Senegal, GN Guinea, BJ Benin, TG Togo, SL Sierra Leone, "
     "LR Liberia, MR Mauritania, GM The Gambia, GW Guinea-Bissau, CV Cape Verde, "
     "SH Saint Helena Ascension and Tristan da Cunha"),
    ("Eastern Africa", "Africa", "ET Ethiopia, TZ Tanzania, KE Kenya, UG Uganda, "
     "MZ Mozambique, MG Madagascar, MW Malawi, ZM Zambia, ZW Zimbabwe, SO Somalia, "
     "RW Rwanda, BI Burundi, ER Eritrea, MU Mauritius, DJ Djibouti, RE Réunion, KM Comoros, "
     "YT Mayotte, SC Seychelles"),
    ("Northern Africa", "Africa", "EG Egypt, DZ Algeria, SD Sudan, MA Morocco, TN Tunisia, "
     "LY Libya, EH Western Sahara"),
    ("Middle Africa", "Africa", "CD Democratic Republic of the Congo, AO Angola, CM Cameroon, "
     "TD Chad, CG Congo, CF Central African Republic, GA Gabon, GQ Equatorial Guinea, "
     "ST Sao Tome and Principe"),
    ("Southern Africa", "Africa", "ZA South Africa, NA Namibia, BW Botswana, LS Lesotho, "
     "SZ Swaziland"),
    ("Eastern Europe", "Europe", "RU Russia, UA Ukraine, PL Poland, RO Romania, "
     "CZ Czech Republic, HU Hungary, BY Belarus, BG Bulgaria, SK Slovakia, MD Moldova"),
    ("Western Europe", "Europe", "DE Germany, FR France, NL Netherlands, BE Belgium, "
     "AT Austria, CH Switzerland, LU Luxembourg, MC Monaco, LI Liechtenstein"),
    ("Northern Europe", "Europe", "GB United Kingdom, SE Sweden, DK Denmark, FI Finland, "
     "NO Norway, IE Ireland, LT Lithuania, LV Latvia, EE Estonia, IS Iceland, "
     "JE Guernsey and Jersey, IM Isle of Man, FO Faroe Islands"),
    ("Southern Europe", "Europe", "IT Italy, ES Spain, GR Greece, PT Portugal, RS Serbia, "
     "HR Croatia, BA Bosnia and Herzegovina, AL Albania, MK Republic of Macedonia, "
     "SI Slovenia, ME Montenegro, MT Malta, AD Andorra, GI Gibraltar, SM San Marino, "
     "VA Vatican City"),
    ("AustraliaandNew Zealand", "Oceania", "AU Australia, NZ New Zealand"),
    ("Melanesia", "Oceania", "PG Papua New Guinea, FJ Fiji, SB Solomon Islands, "
     "NC New Caledonia, VU Vanuatu"),
    ("Polynesia", "Oceania", "PF French Polynesia, WS Samoa, TO Tonga, AS American Samoa, "
     "CK Cook Islands, WF Wallis and Futuna, TV Tuvalu, NU Niue, TK Tokelau"),
    ("Micronesia", "Oceania", "GU Guam, KI Kiribati, FM Federated States of Micronesia, "
     "MP Northern Mariana Islands, MH Marshall Islands, PW Palau, NR Nauru"),
)


def _build_countries() -> Mapping[str, Country]:
    table: dict[str, Country] = {}
    for statistical, continental, entries in _TABLE:
        for entry in entries.split(", "):
            code, name = entry.split(" ", 1)
            table[code] = Country(code, name, statistical, continental)
    return MappingProxyType(table)


COUNTRIES: Mapping[str, Country] = _build_countries()
"""Country code → :class:`Country`, exactly the spec's table."""

ETHNIC_GROUPS: Mapping[str, str] = MappingProxyType({
    "GERMANIC": "Germanic (German, Austrian, Swiss)",
    "SCANDINAVIAN": "Scandinavian (Swedish, Norwegian, Danish, Finnish)",
    "ENGLISH": "English",
    "DUTCH": "Dutch",
    "HUNGARIAN": "Hungarian",
    "ESTONIAN": "Estonian",
    "LATVIAN": "Latvian",
    "LITHUANIAN": "Lithuanian",
    "SLOVENIAN": "Slovenian",
    "CROATIAN": "Croatian",
    "SERBIAN": "Serbian",
    "BOSNIAN": "Bosnian",
    "MACEDONIAN": "Macedonian",
    "BULGARIAN": "Bulgarian",
    "ROMANIAN": "Romanian",
    "POLISH": "Polish",
    "SLOVAK": "Slovak",
    "CZECH": "Czech",
    "RUSSIAN": "Russian",
    "UKRAINIAN": "Ukrainian",
    "BELARUSIAN": "Belarusian",
    "ICELANDIC": "Icelandic",
    "FAROESE": "Faroese",
    "SCOTTISH": "Scottish",
    "IRISH": "Irish",
    "WELSH": "Welsh",
    "ITALIAN": "Italian",
    "SPANISH": "Spanish",
    "PORTUGUESE": "Portuguese",
    "FRENCH": "French",
    "GREEK": "Greek",
    "TURKISH": "Turkish",
    "ARMENIAN": "Armenian",
    "GEORGIAN": "Georgian",
    "ALBANIAN": "Albanian",
    "KURDISH": "Kurdish",
    "PERSIAN": "Persian",
    "ARAB": "Arab (Various Arabic-speaking countries)",
    "HEBREW": "Hebrew",
    "INDIAN": "Indian",
    "PAKISTANI": "Pakistani",
    "BANGLADESHI": "Bangladeshi",
    "SRI_LANKAN": "Sri Lankan",
    "NEPALI": "Nepali",
    "BHUTANESE": "Bhutanese",
    "TIBETAN": "Tibetan",
    "CHINESE": "Chinese",
    "JAPANESE": "Japanese",
    "KOREAN": "Korean",
    "VIETNAMESE": "Vietnamese",
    "THAI": "Thai",
    "MALAYSIAN": "Malaysian",
    "INDONESIAN": "Indonesian",
    "FILIPINO": "Filipino",
    "AUSTRALIAN_ABORIGINAL": "Australian Aboriginal",
    "MAORI": "Maori (New Zealand)",
    "NATIVE_AMERICAN": "Native American (various tribes in North and South America)",
    "INUIT": "Inuit (Arctic regions)",
    "AFRICAN": "African ethnic groups (various countries and tribes)",
    "PACIFIC_ISLANDER": "Pacific Islander (various islands and cultures)",
})
"""Ethnic-group id → name, exactly the spec's table (the ``ethnicity`` object's values)."""
