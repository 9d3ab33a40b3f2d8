"""dpbandits.harness"""
