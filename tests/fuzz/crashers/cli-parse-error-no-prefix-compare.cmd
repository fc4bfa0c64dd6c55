compare CONFIG --jobs abc
