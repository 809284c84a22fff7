"""`narrate dashboard`: rq-dashboard with narrate's fixes, the Host/Origin guard and CSP, the progress
page and its read model."""
