"""Privacy models as checks (what a partition achieves) and as constraints (what it must meet)."""

from core.privacy.check import PrivacyLevels, achieved, contingency
from core.privacy.models import class_ok, distinct_l, emd, entropy_l, recursive_cl_ok, recursive_l
from core.privacy.requirement import PrivacyRequirement

__all__ = ["PrivacyLevels", "PrivacyRequirement", "achieved", "class_ok", "contingency", "distinct_l", "emd",
           "entropy_l", "recursive_cl_ok", "recursive_l"]
