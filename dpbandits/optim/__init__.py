"""dpbandits.optim"""
