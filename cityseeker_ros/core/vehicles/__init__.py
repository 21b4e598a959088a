"""cityseeker_ros/core/vehicles"""
