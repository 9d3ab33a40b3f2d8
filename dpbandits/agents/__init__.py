"""dpbandits.agents"""
