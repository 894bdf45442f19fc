import os

from hypothesis import settings

# "dev" keeps local runs quick; CI sets $CI and gets the thorough profile.
settings.register_profile("dev", max_examples=25, deadline=None)
settings.register_profile("ci", max_examples=150, deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")
