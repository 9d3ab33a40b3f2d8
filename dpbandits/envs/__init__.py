"""dpbandits.envs"""
