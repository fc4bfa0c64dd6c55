compare CONFIG --json
