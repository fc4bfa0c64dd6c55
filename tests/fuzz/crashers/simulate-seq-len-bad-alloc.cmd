simulate CONFIG
