"""The order site: a Django 6.1 project whose mail goes through MAILERS."""
