"""Rendering reports: text formats (table, markdown, csv, json) and the html page."""
