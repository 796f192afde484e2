"""A Django site that mails order confirmations, tested with Django's own runner."""
