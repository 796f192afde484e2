"""A Django site that only sends mail, for the TLS page of the docs."""
