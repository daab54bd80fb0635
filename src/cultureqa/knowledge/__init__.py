"""Province knowledge base and gazetteer (DESIGN.md §5, §9).

The knowledge base is data (``data/knowledge/provinces/*.yaml``); this package parses it into
frozen records and builds the name index that normalises province answers and detects place
names used as locations in generated questions.
"""

from cultureqa.knowledge.gazetteer import (
    Gazetteer,
    LocationMention,
    find_location_mentions,
    has_location_leak,
    normalize_province,
)
from cultureqa.knowledge.provinces import (
    CANONICAL_PROVINCES,
    CULTURAL_KINDS,
    CulturalItem,
    Event,
    GeographyFeature,
    KnowledgeBase,
    KnowledgeBaseError,
    Province,
    Statistic,
    load_knowledge_base,
)

__all__ = [
    "CANONICAL_PROVINCES",
    "CULTURAL_KINDS",
    "CulturalItem",
    "Event",
    "Gazetteer",
    "GeographyFeature",
    "KnowledgeBase",
    "KnowledgeBaseError",
    "LocationMention",
    "Province",
    "Statistic",
    "find_location_mentions",
    "has_location_leak",
    "load_knowledge_base",
    "normalize_province",
]
