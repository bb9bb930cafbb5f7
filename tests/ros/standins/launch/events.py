def matches_action(action):
    return ("matches_action", action)
