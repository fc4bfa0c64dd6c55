simulate CONFIG --json
