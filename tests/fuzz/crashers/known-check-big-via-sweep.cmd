check CONFIG
