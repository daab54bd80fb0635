"""Region sets: the ID-MoCQA two-hop method for any set of regions (docs/region-sets.md)."""
