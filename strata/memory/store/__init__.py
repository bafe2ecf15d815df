"""Memory's store: every repository and all the SQL of memory. Built on `rules`, `checks`,
`coordination` and `engines`; the feature packages (`recall`, `lifecycle`, `facts`) read and write
through it.
"""
