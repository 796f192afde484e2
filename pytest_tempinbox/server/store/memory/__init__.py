"""The store in memory: :class:`~.store.Store`, the default, in the server's process.

Each inbox is an :class:`~.inbox_record.InboxRecord` kept under the store's lock.
"""
