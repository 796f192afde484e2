"""A shop that sends its order mail through Postmark's API with django-anymail."""
