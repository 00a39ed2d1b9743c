"""The store: the collected records on disk and the history they make.

Below ``features`` and above ``collectors``: the store's typed tables (:mod:`storage.schema`),
the files that hold them, verified and written atomically (:mod:`storage.store`), and the
history the feature builder reads from them (:mod:`storage.history`).  Nothing here
collects, learns or knows the project's configuration.
"""
