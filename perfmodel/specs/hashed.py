"""Specs that caches key on: hashable despite their dict fields, the hash computed once."""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, PrivateAttr


class HashedSpec(BaseModel):
    """A frozen spec hashed by its JSON form without the descriptive fields (`HASH_EXCLUDE`), so derived counts
    and placements can be cached on it. The hash is kept in pydantic's private storage and read from it
    directly: pydantic's private-attribute lookup costs ~3 us a call, and the planner's caches hash a spec
    ~1,000 times per search."""

    HASH_EXCLUDE: ClassVar[set[str]] = set()
    _hash: int | None = PrivateAttr(default=None)

    def __hash__(self) -> int:
        priv = self.__pydantic_private__
        h = priv.get("_hash")
        if h is None:
            h = priv["_hash"] = hash(self.model_dump_json(exclude=self.HASH_EXCLUDE))
        return h

    def model_copy(self, *, update=None, deep: bool = False):
        """pydantic's copy, without the cached hash where fields change (pydantic copies private attributes, so a
        changed copy would keep its original's hash: equal hashes of unequal specs, every cache lookup then an
        equality test of all fields)."""
        c = super().model_copy(update=update, deep=deep)
        if update:
            c.__pydantic_private__["_hash"] = None
        return c
