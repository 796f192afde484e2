"""A Django site that signs users up and confirms their address by mail."""
