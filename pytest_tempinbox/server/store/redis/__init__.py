"""The store in Redis (or Valkey): :class:`~.store.RedisStore`, shared by several servers.

The only modules that import redis-py and hiredis (the ``redis`` extra),
imported when a configuration names a ``redis://`` store: the connection
(:mod:`.connection`), the Lua scripts (:mod:`.scripts`), the records as Redis
keeps them (:mod:`.records`), the refusals (:mod:`.refusals`) and the
notices that wake waiting reads (:mod:`.notices`).
"""
