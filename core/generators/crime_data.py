"""Reference tables of the synthetic crime-report generator.

The setting follows the CG paper (a South African police service receiving about 10,000 reports
per station per day): Cape Town suburbs with their postal codes grouped into policing districts,
offences with a severity weight (the paper's Table 1 values, Murder 25 from its Example 2, and
other common offences on the same "guideline sentence" scale), and per-offence profiles.

Frequencies are loosely modelled on published South African crime statistics: property and
public-order offences make up most reports, contact crimes are frequent, murder and rape are rare.
The data is synthetic; postcodes are the usual South African box/street codes of each suburb.
"""

from __future__ import annotations

from dataclasses import dataclass

REPORTERS: tuple[str, ...] = ("victim", "witness", "officer", "anonymous", "relative", "business")
SEXES: tuple[str, ...] = ("F", "M", "X")

# hour-of-day profiles (relative weights for hours 0..23)
HOURS: dict[str, tuple[float, ...]] = {
    "day": (1, 1, 1, 1, 1, 2, 3, 5, 7, 9, 10, 10, 10, 10, 10, 10, 9, 8, 6, 4, 3, 2, 2, 1),
    "evening": (3, 2, 1, 1, 1, 1, 1, 2, 3, 4, 4, 5, 5, 5, 6, 7, 8, 9, 10, 10, 9, 8, 6, 4),
    "night": (9, 8, 6, 4, 3, 2, 1, 1, 1, 1, 1, 2, 2, 2, 2, 3, 4, 5, 6, 7, 8, 9, 10, 10),
    "flat": (4, 3, 3, 2, 2, 2, 3, 4, 5, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 5, 5),
}


@dataclass(frozen=True)
class Offence:
    """Profile of one offence: severity weight, share of reports, who it concerns and who reports it.

    ``age`` is (minimum, mean, standard deviation) of the age of the person the report concerns;
    ``reporter`` holds weights in the order of :data:`REPORTERS`.
    """

    severity: float
    share: float
    age: tuple[float, float, float]
    p_male: float
    reporter: tuple[float, float, float, float, float, float]
    hours: str
    violent: bool


# columns: severity, share, age (min, mean, sd), p_male, reporter weights (victim .. business), hours, violent
OFFENCES: dict[str, Offence] = {
    "Disorderly conduct": Offence(3, 0.100, (12, 24, 7), 0.80, (0.03, 0.25, 0.45, 0.20, 0.00, 0.07), "night", False),
    "Embezzlement":       Offence(3, 0.020, (18, 42, 10), 0.50, (0.10, 0.00, 0.00, 0.05, 0.00, 0.85), "day", False),
    "Vandalism":          Offence(3, 0.070, (12, 21, 7), 0.82, (0.35, 0.15, 0.05, 0.15, 0.00, 0.30), "night", False),
    "Shoplifting":        Offence(3, 0.080, (12, 27, 12), 0.55, (0.00, 0.07, 0.10, 0.03, 0.00, 0.80), "day", False),
    "Trespassing":        Offence(3, 0.030, (12, 30, 12), 0.80, (0.35, 0.10, 0.15, 0.05, 0.00, 0.35), "flat", False),
    "Theft":              Offence(5, 0.200, (12, 30, 11), 0.72, (0.70, 0.08, 0.04, 0.03, 0.05, 0.10), "day", False),
    "Drunken driving":    Offence(5, 0.050, (16, 36, 11), 0.83, (0.00, 0.06, 0.90, 0.04, 0.00, 0.00), "night", False),
    "Fraud":              Offence(5, 0.050, (18, 38, 12), 0.60, (0.60, 0.00, 0.00, 0.05, 0.05, 0.30), "day", False),
    "Drug possession":    Offence(5, 0.080, (12, 26, 8), 0.85, (0.00, 0.05, 0.85, 0.10, 0.00, 0.00), "evening", False),
    "Assault":            Offence(7, 0.120, (12, 29, 10), 0.78, (0.55, 0.15, 0.10, 0.08, 0.12, 0.00), "night", True),
    "Robbery":            Offence(7, 0.050, (12, 24, 7), 0.90, (0.75, 0.12, 0.05, 0.00, 0.03, 0.05), "evening", True),
    "Burglary":           Offence(10, 0.080, (12, 27, 9), 0.90, (0.70, 0.07, 0.00, 0.03, 0.08, 0.12), "flat", False),
    "Arson":              Offence(15, 0.005, (12, 30, 12), 0.82, (0.25, 0.35, 0.10, 0.10, 0.00, 0.20), "night", True),
    "Sexual assault":     Offence(15, 0.012, (12, 33, 13), 0.96, (0.70, 0.05, 0.00, 0.05, 0.20, 0.00), "evening", True),
    "Rape":               Offence(20, 0.008, (12, 30, 11), 0.98, (0.65, 0.05, 0.05, 0.00, 0.25, 0.00), "night", True),
    "Kidnapping":         Offence(20, 0.003, (12, 31, 10), 0.80, (0.00, 0.15, 0.10, 0.05, 0.70, 0.00), "flat", True),
    "Attempted murder":   Offence(20, 0.006, (12, 27, 8), 0.89, (0.35, 0.30, 0.20, 0.00, 0.15, 0.00), "night", True),
    "Murder":             Offence(25, 0.006, (12, 28, 9), 0.89, (0.00, 0.30, 0.35, 0.05, 0.30, 0.00), "night", True),
}  # fmt: skip

SEVERITY: dict[str, float] = {name: o.severity for name, o in OFFENCES.items()}

# district -> (violent-crime factor, [(suburb, postcode, relative report volume), ...])
DISTRICTS: dict[str, tuple[float, list[tuple[str, str, float]]]] = {
    "City Bowl": (0.9, [
        ("Cape Town CBD", "8001", 3.0), ("Gardens", "8001", 1.5), ("Tamboerskloof", "8001", 0.7),
        ("Oranjezicht", "8001", 0.6), ("Vredehoek", "8001", 0.5), ("Bo-Kaap", "8001", 0.7),
        ("Woodstock", "7925", 1.6), ("Salt River", "7925", 1.3), ("Observatory", "7925", 1.1)]),
    "Atlantic Seaboard": (0.5, [
        ("Sea Point", "8005", 1.8), ("Green Point", "8005", 1.0), ("Camps Bay", "8005", 0.6),
        ("Clifton", "8005", 0.2), ("Fresnaye", "8005", 0.3), ("Hout Bay", "7806", 1.2)]),
    "Southern Suburbs": (0.6, [
        ("Rondebosch", "7700", 1.2), ("Newlands", "7700", 0.6), ("Mowbray", "7700", 0.8),
        ("Rosebank", "7700", 0.5), ("Claremont", "7708", 1.4), ("Kenilworth", "7708", 0.7),
        ("Wynberg", "7800", 1.3), ("Plumstead", "7800", 0.8), ("Constantia", "7806", 0.6)]),
    "Cape Flats": (2.0, [
        ("Khayelitsha", "7784", 4.0), ("Mitchells Plain", "7785", 3.5), ("Philippi", "7785", 1.8),
        ("Gugulethu", "7750", 2.0), ("Nyanga", "7750", 2.2), ("Langa", "7455", 1.2),
        ("Athlone", "7764", 1.3), ("Manenberg", "7764", 1.4), ("Hanover Park", "7780", 1.0),
        ("Lansdowne", "7780", 0.9), ("Delft", "7100", 2.0), ("Bishop Lavis", "7490", 1.1)]),
    "Northern Suburbs": (1.0, [
        ("Bellville", "7530", 2.0), ("Parow", "7500", 1.3), ("Goodwood", "7460", 1.0),
        ("Elsies River", "7490", 1.5), ("Durbanville", "7550", 0.9), ("Brackenfell", "7560", 0.8),
        ("Kuils River", "7580", 1.2), ("Kraaifontein", "7570", 1.6)]),
    "Blaauwberg": (0.9, [
        ("Milnerton", "7441", 1.3), ("Table View", "7441", 1.2), ("Bloubergstrand", "7441", 0.5),
        ("Dunoon", "7441", 1.4), ("Atlantis", "7349", 1.3), ("Melkbosstrand", "7441", 0.4)]),
    "South Peninsula": (1.0, [
        ("Muizenberg", "7945", 0.9), ("Retreat", "7945", 1.3), ("Lavender Hill", "7945", 1.0),
        ("Kalk Bay", "7945", 0.2), ("Grassy Park", "7941", 1.0), ("Fish Hoek", "7975", 0.6),
        ("Simon's Town", "7975", 0.3), ("Ocean View", "7975", 0.8)]),
    "Helderberg": (0.9, [
        ("Somerset West", "7130", 1.3), ("Macassar", "7134", 0.8), ("Strand", "7140", 1.2),
        ("Gordon's Bay", "7150", 0.5)]),
}

FIRST_NAMES_F: tuple[str, ...] = (
    "Thandi", "Nomvula", "Zanele", "Lerato", "Ayanda", "Naledi", "Busisiwe", "Precious", "Fatima", "Aaliyah",
    "Zainab", "Chantal", "Michelle", "Charlene", "Natasha", "Anneke", "Elize", "Marietjie", "Sarah", "Emma",
    "Olivia", "Jessica", "Nicole", "Lindiwe", "Sibongile", "Nosipho", "Palesa", "Refilwe", "Karabo", "Megan",
)
FIRST_NAMES_M: tuple[str, ...] = (
    "Sipho", "Thabo", "Mandla", "Lwazi", "Sizwe", "Bongani", "Themba", "Luthando", "Xolani", "Kagiso",
    "Tshepo", "Ashraf", "Yusuf", "Ebrahim", "Riaan", "Johan", "Pieter", "Francois", "Andre", "Jaco",
    "Dylan", "Ryan", "Jason", "Brandon", "Michael", "David", "Ethan", "Aidan", "Mthunzi", "Lungile",
)
SURNAMES: tuple[str, ...] = (
    "Nkosi", "Dlamini", "Ndlovu", "Mokoena", "Mahlangu", "Khumalo", "Mthembu", "Zulu", "Ntuli", "Mabaso",
    "Sithole", "Mbeki", "Mahlaba", "Jacobs", "Adams", "Petersen", "Williams", "Hendricks", "Isaacs", "Davids",
    "Abrahams", "Solomons", "Daniels", "Fortuin", "Arendse", "van der Merwe", "Botha", "Pretorius", "Smit",
    "du Plessis", "van Wyk", "le Roux", "Nel", "Venter", "Fourie", "Smith", "Jones", "Naidoo", "Pillay",
    "Govender", "Moodley", "Patel", "Mohamed", "Cassiem", "Makhubela", "Tshabalala", "Radebe", "Gumede", "Cele",
)
